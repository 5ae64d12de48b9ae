"""The sampled closed loop in C: a whole run of a sampled controller in one call (``fm_sampled_run``).

:data:`SOURCE` is compiled after :data:`flexman.codegen.loop.SOURCE` and
:data:`flexman.codegen.loop_reduced.SOURCE` into the same library and uses their plant,
controller law, LDL^T solve and, for a reduced model's plant, its solve of the dropped coordinates
under the held torque. It does, operation for operation, what the
Python loop does (:func:`flexman.simulate.sampled.run_sampled` with
:meth:`flexman.control.Sampled.sample`): between samples RK4 on the output grid under the held
torque; at each sample the sensors' readings (encoders and strain gauges: a row in q; joint
torque sensors: a row of ``M qdd + b``), their bias, noise and count, the steady-state Kalman
filter's correction with its fixed gain, the law (a built-in one of ``fm_control_law``) at the
estimate carried over the delay by the filter's model, the delay line, the filter's prediction
(RK4 of the model over the sample) and the torque disturbance. The random draws (sensor noise,
disturbance) are NumPy's, made in Python before the run and passed as arrays, so both loops read
the same numbers. Forward dynamics differ from the Python loop's by round-off only (the model's
M and b, solved here by LDL^T).
"""
from __future__ import annotations

import ctypes

SOURCE = r"""
/* ----- sampled control (flexman.control.sampled) ----- */

/* A sampled controller: readings, filter, delay and disturbance; the law is the fm_control beside it.
   Reading r is row[r] < 0: H[r] . q (a row in q: encoder, strain gauge), else coordinate row[r] of the
   inverse dynamics M qdd + b (a joint torque sensor); then + bias + draw * sd, counted to quantum when
   quantum > 0. draws: n_samples x m standard normal draws of the sensors' streams. gain: 2 nq x m, the
   steady-state Kalman gain (NULL: no filter, the law reads the true state), est_period and est_steps:
   the filter's prediction (RK4 steps per sample). delay: whole samples; nz: the law's states (a PID's
   integrals, Euler over the sample). dist_sd (nj, NULL: none) and dist_draws (n_samples x nj): the
   torque disturbance added to the held torque. */
typedef struct {
    int m;
    const double *H;
    const int *row;
    const double *bias, *sd, *quantum, *draws;
    const double *gain;
    int est_steps, needs_qdd;
    double est_period;
    int delay, nz;
    double period;
    const double *dist_sd, *dist_draws;
} fm_sampler;

/* qdd of the plant under the joint torques tau (M qdd = S tau - b); NaN when M is singular, so
   that the state turns non-finite as the Python loop's does. M, b: scratch (nq x nq, nq). */
static void fm_sampled_qdd(const fm_plant *pl, const double *q, const double *qd, const double *tau, double *qdd,
                           double *M, double *b)
{
    int nq = pl->nq, nj = pl->nj;
    fm_eom(pl, pl->p, q, qd, M, b);
    if (pl->act) {
        for (int i = 0; i < nq; ++i) qdd[i] = -b[i];
        for (int j = 0; j < nj; ++j) qdd[pl->act[j]] += tau[j];
    } else
        for (int i = 0; i < nq; ++i) qdd[i] = (i < nj ? tau[i] : 0.0) - b[i];
    if (fm_ldl(nq, M)) {
        for (int i = 0; i < nq; ++i) qdd[i] = NAN;
        return;
    }
    fm_ldl_apply(nq, M, qdd);
}

/* n RK4 steps of h under the constant torque tau from x (2 nq, in place): the plant's step and
   the filter's prediction (flexman.control.estimation.rk4_sample). s: 5 x 2 nq + nq^2 + nq scratch. */
static void fm_sampled_rk4(const fm_plant *pl, double *x, const double *tau, double h, long n, double *s)
{
    int nq = pl->nq, nx = 2 * nq;
    double *k1 = s, *k2 = k1 + nx, *k3 = k2 + nx, *k4 = k3 + nx, *y = k4 + nx, *M = y + nx, *b = M + (long)nq * nq;
    double *ks[4] = {k1, k2, k3, k4};
    for (long step = 0; step < n; ++step) {
        for (int stage = 0; stage < 4; ++stage) {
            const double *at = x;
            if (stage) {
                double c = stage == 3 ? h : 0.5 * h;
                for (int i = 0; i < nx; ++i) y[i] = x[i] + c * ks[stage - 1][i];
                at = y;
            }
            memcpy(ks[stage], at + nq, sizeof(double) * nq);
            fm_sampled_qdd(pl, at, at + nq, tau, ks[stage] + nq, M, b);
        }
        for (int i = 0; i < nx; ++i) x[i] = x[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    }
}

/* The noiseless readings at (q, qd, qdd) (flexman.sensors.SensorSet.h). M, b: scratch. */
static void fm_sampled_h(const fm_plant *pl, const fm_sampler *s, const double *q, const double *qd,
                         const double *qdd, double *y, double *M, double *b)
{
    int nq = pl->nq, eom = 0;
    for (int r = 0; r < s->m; ++r) {
        double v = 0.0;
        if (s->row[r] < 0) {
            for (int k = 0; k < nq; ++k) v += q[k] * s->H[(long)r * nq + k];
        } else {
            if (!eom) { fm_eom(pl, pl->p, q, qd, M, b); eom = 1; }
            for (int k = 0; k < nq; ++k) v += M[(long)s->row[r] * nq + k] * qdd[k];
            v += b[s->row[r]];
        }
        y[r] = v;
    }
}

/* A run of the sampled loop over the grid t[0..n_t-1] from x0 = [q0, qd0]: a sample every `steps`
   grid steps, RK4 at the grid between them under the held torque. xbar0 (2 nq): the filter's
   prediction at the first sample; z0 (nz): the law's states. Results: X (n_t x 2 nq) and TAU
   (n_t x nj, the applied torque, disturbance included) on the grid; per sample TS (time), Y and
   YTRUE (m readings, noisy and true) and XHAT (2 nq: the estimate, or the true state without a
   filter). *n_out: grid samples kept (those before a non-finite state), *n_samples: samples taken,
   *t_fault: when the state turned non-finite (or the law met a singular M_ff), *evals: right-hand
   sides of the plant. Returns FM_OK, FM_DIVERGED, FM_SINGULAR or FM_NOMEMORY.
   red (NULL: none): a reduced model of the plant pl (pl is &red->full): the plant integrates its
   active state [q_a, qd_a] (x0 and X: 2 na per row) with the dropped coordinates solved under the
   held torque (fm_reduced_held), and the sensors and the law read the full state there; the
   iteration starts from q_d = 0 and leaves its last solution in red->last. FM_NOT_CONVERGED when it
   does not converge. */
int fm_sampled_run(const fm_plant *pl, const fm_control *c, const fm_sampler *s, const double *t, long n_t,
                   const double *x0, const double *xbar0, const double *z0, long steps, double *X, double *TAU,
                   double *TS, double *Y, double *YTRUE, double *XHAT, long *n_out, long *n_samples,
                   double *t_fault, long *evals, fm_reduced *red)
{
    int nq = pl->nq, nj = pl->nj, nx = 2 * nq, m = s->m, nd = s->delay > 0 ? s->delay : 1;
    int ns = red ? 2 * red->na : nx;  /* the plant's integrated state */
    long ws = fm_work_size(nq, nj);
    long size = ws + 5L * nx + (long)nq * nq + nq                     /* law scratch, RK4 scratch */
                + 4L * nx + 3L * nq + (long)nq * nq                   /* x, xbar, xlaw, xhat; qdd, b, dz; M */
                + 2L * m + (long)(s->nz > 0 ? s->nz : 1) + (long)nd * nj + 4L * nj
                + (red ? 7L * ns + 2L * nj : 0);                      /* a reduced plant's state, rates, RK4 */
    double *work = (double *)malloc(sizeof(double) * size);
    if (!work) { *n_out = 0; *n_samples = 0; return FM_NOMEMORY; }
    double *rk = work + ws, *x = rk + 5L * nx + (long)nq * nq + nq, *xbar = x + nx, *xlaw = xbar + nx;
    double *xhat = xlaw + nx, *qdd = xhat + nx, *b = qdd + nq, *dz = b + nq, *M = dz + nq;
    double *innov = M + (long)nq * nq, *yh = innov + m, *z = yh + m, *pend = z + (s->nz > 0 ? s->nz : 1);
    double *applied = pend + (long)nd * nj, *tau_prev = applied + nj, *tau_new = tau_prev + nj, *tau = tau_new + nj;
    double *xs = red ? tau + nj : x, *dxs = xs + ns, *rkr = dxs + ns;  /* the full plant's state is x itself */
    int status = FM_OK, diverged = 0;
    long i = 0, k = 0, head = 0;
    memcpy(xs, x0, sizeof(double) * ns);
    memcpy(X, x0, sizeof(double) * ns);
    if (red) for (int d = 0; d < red->nd; ++d) red->last[d] = 0.0;
    if (s->gain) memcpy(xbar, xbar0, sizeof(double) * nx);
    if (s->nz) memcpy(z, z0, sizeof(double) * s->nz);
    for (long j = 0; j < (long)nd * nj; ++j) pend[j] = 0.0;
    for (int j = 0; j < nj; ++j) applied[j] = tau_prev[j] = 0.0;
    *evals = 0;
    while (i < n_t - 1) {
        double tk = t[i];
        /* the readings: the accelerations under the torque held just before the sample */
        if (red && (status = fm_reduced_held(red, tk, xs, applied, dxs, x, qdd, rkr))) {  /* the full state */
            *t_fault = tk;
            break;
        }
        if (m) {
            double *ytrue = YTRUE + k * m, *y = Y + k * m;
            if (s->needs_qdd && !red) fm_sampled_qdd(pl, x, x + nq, applied, qdd, M, b);
            fm_sampled_h(pl, s, x, x + nq, qdd, ytrue, M, b);
            for (int r = 0; r < m; ++r) {
                double v = ytrue[r] + s->bias[r] + s->draws[k * m + r] * s->sd[r];
                y[r] = s->quantum[r] != 0.0 ? rint(v / s->quantum[r]) * s->quantum[r] : v;
            }
        }
        /* the estimate: the filter's correction, or the true state */
        if (s->gain) {
            if (s->needs_qdd) fm_sampled_qdd(pl, xbar, xbar + nq, tau_prev, qdd, M, b);
            fm_sampled_h(pl, s, xbar, xbar + nq, qdd, yh, M, b);
            for (int r = 0; r < m; ++r) innov[r] = Y[k * m + r] - yh[r];
            for (int a = 0; a < nx; ++a) {
                double v = 0.0;
                for (int r = 0; r < m; ++r) v += s->gain[(long)a * m + r] * innov[r];
                xbar[a] = xbar[a] + v;
            }
            memcpy(xhat, xbar, sizeof(double) * nx);
        } else
            memcpy(xhat, x, sizeof(double) * nx);
        /* the law at the estimate carried over the delay under the torques already committed */
        double t_law = tk + s->delay * s->period;
        int predicted = 0;  /* the first sample of the carry is the filter's prediction (same torque, same sample) */
        memcpy(xlaw, xhat, sizeof(double) * nx);
        if (s->delay && s->gain)
            for (int d = 0; d < s->delay; ++d) {
                fm_sampled_rk4(pl, xlaw, pend + ((head + d) % s->delay) * nj, s->period / s->est_steps,
                               s->est_steps, rk);
                if (d == 0 && s->est_period == s->period) { memcpy(xbar, xlaw, sizeof(double) * nx); predicted = 1; }
            }
        if (c->kind == FM_CTRL_COMPUTED_TORQUE || c->kind == FM_CTRL_DECOUPLING)  /* the law's M and b */
            fm_eom(pl, pl->p_law ? pl->p_law : pl->p, xlaw, xlaw + nq, M, b);
        if ((status = fm_control_law(pl, c, t_law, xlaw, xlaw + nq, z, M, b, tau_new, dz, work))) {
            *t_fault = tk;
            break;
        }
        for (int j = 0; j < s->nz; ++j) z[j] = z[j] + s->period * dz[j];
        if (s->delay) {
            double *slot = pend + head * nj;
            memcpy(tau, slot, sizeof(double) * nj);
            memcpy(slot, tau_new, sizeof(double) * nj);
            head = (head + 1) % s->delay;
        } else
            memcpy(tau, tau_new, sizeof(double) * nj);
        if (s->gain && !predicted) fm_sampled_rk4(pl, xbar, tau, s->est_period / s->est_steps, s->est_steps, rk);
        memcpy(tau_prev, tau, sizeof(double) * nj);
        for (int j = 0; j < nj; ++j)
            applied[j] = s->dist_sd ? tau[j] + s->dist_draws[k * nj + j] * s->dist_sd[j] : tau[j];
        fm_saturate(nj, applied, pl->tau_limit);  /* the drives' limits */
        TS[k] = tk;
        memcpy(XHAT + k * nx, xhat, sizeof(double) * nx);
        ++k;
        /* the plant over the sample under the held torque */
        for (long st = 0; st < steps; ++st) {
            memcpy(TAU + i * nj, applied, sizeof(double) * nj);
            if (i == n_t - 1) break;
            if (red) status = fm_reduced_held_rk4(red, t[i], xs, applied, t[i + 1] - t[i], rkr);
            else fm_sampled_rk4(pl, x, applied, t[i + 1] - t[i], 1, rk);
            if (status) { *t_fault = t[i]; break; }
            *evals += 4;
            ++i;
            memcpy(X + i * ns, xs, sizeof(double) * ns);
            if (!fm_finite(ns, xs)) { diverged = 1; *t_fault = t[i]; break; }
        }
        if (diverged || status) break;
    }
    memcpy(TAU + i * nj, applied, sizeof(double) * nj);
    *n_out = i + 1 - diverged;
    *n_samples = k;
    free(work);
    return status ? status : (diverged ? FM_DIVERGED : FM_OK);
}
"""

_P = ctypes.POINTER(ctypes.c_double)


class Sampler(ctypes.Structure):
    _fields_ = [("m", ctypes.c_int), ("H", _P), ("row", ctypes.POINTER(ctypes.c_int)), ("bias", _P), ("sd", _P),
                ("quantum", _P), ("draws", _P), ("gain", _P), ("est_steps", ctypes.c_int),
                ("needs_qdd", ctypes.c_int), ("est_period", ctypes.c_double), ("delay", ctypes.c_int),
                ("nz", ctypes.c_int), ("period", ctypes.c_double), ("dist_sd", _P), ("dist_draws", _P)]


def type_entry_points(lib):
    """Declare ``fm_sampled_run``'s arguments on the loaded loop library."""
    vp, P, L = ctypes.c_void_p, _P, ctypes.c_long
    lib.fm_sampled_run.restype = ctypes.c_int
    lib.fm_sampled_run.argtypes = [vp, vp, vp, P, L, P, P, P, L, P, P, P, P, P, P, ctypes.POINTER(L),
                                   ctypes.POINTER(L), P, ctypes.POINTER(L), vp]
