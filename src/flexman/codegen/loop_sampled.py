"""The sampled closed loop in C: a whole run of a sampled controller in one call (``fm_sampled_run``).

:data:`SOURCE` is compiled after :data:`flexman.codegen.loop.SOURCE` and
:data:`flexman.codegen.loop_reduced.SOURCE` into the same library and uses their plant,
controller law, LDL^T solve and, for a reduced model's plant, its solve of the dropped coordinates
under the held torque. It does, operation for operation, what the
Python loop does (:func:`flexman.simulate.sampled.run_sampled` with
:meth:`flexman.control.Sampled.sample`): between samples RK4 on the output grid under the held
torque; at each sample the sensors' readings (encoders and strain gauges: a row in q; joint
torque sensors: a row of ``M qdd + b`` plus the joint spring's rows in q and qd; accelerometers, gyroscopes and position sensors: the
set's compiled frame-sensor program, a late position sensor at the positions of earlier samples,
interpolated between two as in Python), their bias, noise and count, the Kalman filter's
correction (the steady-state filter's fixed gain, or the extended filter's gain from its own
covariance by a dense LDL^T solve of ``C P C^T + R``), the law (a built-in one of
``fm_control_law``) at the estimate carried over the delay by the filter's model, the delay
line, the filter's prediction (RK4 of the model over the sample; the extended filter's
covariance through the exact derivative of that RK4 prediction, each stage's tangent from the
model's partial derivatives) and the torque disturbance. The random draws (sensor noise,
disturbance) are NumPy's, made in Python before the run and passed as arrays, so both loops read
the same numbers. Forward dynamics differ from the Python loop's by round-off only (the model's
M and b, solved here by LDL^T).
"""
from __future__ import annotations

import ctypes

SOURCE = r"""
/* ----- sampled control (flexman.control.sampled) ----- */

/* A sampled controller: readings, filter, delay and disturbance; the law is the fm_control beside it.
   Reading r is H[r] . q + Hd[r] . qd (rows in q and qd: an encoder, a strain gauge, an elastic joint's
   spring and damper), plus for row[r] >= 0 coordinate row[r] of the inverse dynamics M qdd + b (a joint
   torque sensor: the torque the joint transmits); then + bias + draw * sd, counted to quantum when
   quantum > 0. draws: n_samples x m standard normal draws of the sensors' streams. gain: 2 nq x m, the
   steady-state Kalman gain (NULL: no filter, the law reads the true state), est_period and est_steps:
   the filter's prediction (RK4 steps per sample). delay: whole samples; nz: the law's states (a PID's
   integrals, Euler over the sample). dist_sd (nj, NULL: none) and dist_draws (n_samples x nj): the
   torque disturbance added to the held torque. */
typedef struct {
    int m;
    const double *H, *Hd;
    const int *row;
    const double *bias, *sd, *quantum, *draws;
    const double *gain;
    int est_steps, needs_qdd;
    double est_period;
    int delay, nz;
    double period;
    const double *dist_sd, *dist_draws;
    const struct fm_frames *frames;
    const struct fm_ekf *ekf;  /* the extended Kalman filter (NULL: the steady-state gain) */
} fm_sampler;

/* The extended Kalman filter's covariances (flexman.control.estimation.KalmanFilter, extended=True):
   P the prediction's (2 nq x 2 nq), P_post the corrected estimate's, both updated in place at every
   sample; R (m x m) the readings' noise, W (nj x nj) the torque disturbance's. The model's partial
   derivatives (fm_plant.fd_partials) give the exact derivative of the filter's RK4 prediction. */
typedef struct fm_ekf {
    double *P, *P_post;
    const double *R, *W;
} fm_ekf;

/* The frame sensors' channels (accelerometers, gyroscopes, position sensors), NULL: none. eval: the
   set's fm_frame_sensors(q, qd, qdd, y) (flexman.codegen.frame_sensors), n outputs; reading r is output
   at[r] (-1: not a frame channel), read lag[r] + frac[r] samples late (a position sensor's latency:
   the positions of sample k - lag[r], or (1 - frac) of those plus frac of the sample before; the
   initial positions stand for any sample before the run); max_lag: the largest lag[r] + 1; jac: the
   set's fm_frame_sensor_jacobians(q, qd, qdd, y, Hq, Hqd, Hqdd) (each n x nq), for the extended filter. */
typedef struct fm_frames {
    void (*eval)(const double *, const double *, const double *, double *);
    void (*jac)(const double *, const double *, const double *, double *, double *, double *, double *);
    int n;
    const int *at, *lag;
    const double *frac;
    int max_lag;
} fm_frames;

/* Scratch of the frame sensors: their outputs (n), zero rates (nq), positions read late (nq), the
   first sample's positions (nq), the ring of the last max_lag + 1 samples' positions. */
static long fm_frames_size(const fm_frames *f, int nq)
{
    return f ? f->n + 3L * nq + (long)(f->max_lag + 1) * nq : 0;
}

/* The positions of sample j from the ring (the initial ones q0 before the run). */
static const double *fm_frames_past(const fm_frames *f, int nq, long j, const double *q0, const double *hist)
{
    return j < 0 ? q0 : hist + (j % (f->max_lag + 1)) * nq;
}

/* The late readings of y (sample k at positions q, the full robot's): reading r with a latency is
   the frame output at[r] at the positions that long ago (flexman.sensors.SensorSet.late), the first
   sample's standing for any before the run. */
static void fm_frames_late(const fm_frames *f, int m, int nq, long k, const double *q, double *y, double *w)
{
    long ring = f->max_lag + 1;
    int last = -1;
    double *yf = w, *zero = yf + f->n, *ql = zero + nq, *q0 = ql + nq, *hist = q0 + nq;
    if (k == 0) memcpy(q0, q, sizeof(double) * nq);
    memcpy(hist + (k % ring) * nq, q, sizeof(double) * nq);
    for (int r = 0; r < m; ++r) {
        if (f->lag[r] <= 0 && f->frac[r] == 0.0) continue;
        if (last < 0 || f->lag[r] != f->lag[last] || f->frac[r] != f->frac[last]) {
            const double *a = fm_frames_past(f, nq, k - f->lag[r], q0, hist);
            if (f->frac[r] == 0.0)
                memcpy(ql, a, sizeof(double) * nq);
            else {
                const double *b = fm_frames_past(f, nq, k - f->lag[r] - 1, q0, hist);
                for (int i = 0; i < nq; ++i) ql[i] = (1.0 - f->frac[r]) * a[i] + f->frac[r] * b[i];
            }
            f->eval(ql, zero, zero, yf);
            last = r;
        }
        y[r] = yf[f->at[r]];
    }
}

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
                         const double *qdd, double *y, double *M, double *b, double *yf)
{
    int nq = pl->nq, eom = 0;
    if (s->frames) s->frames->eval(q, qd, qdd, yf);
    for (int r = 0; r < s->m; ++r) {
        double v = 0.0;
        if (s->frames && s->frames->at[r] >= 0) {
            v = yf[s->frames->at[r]];
        } else {
            for (int k = 0; k < nq; ++k) v += q[k] * s->H[(long)r * nq + k] + qd[k] * s->Hd[(long)r * nq + k];
            if (s->row[r] >= 0) {
                if (!eom) { fm_eom(pl, pl->p, q, qd, M, b); eom = 1; }
                for (int k = 0; k < nq; ++k) v += M[(long)s->row[r] * nq + k] * qdd[k];
                v += b[s->row[r]];
            }
        }
        y[r] = v;
    }
}

/* ----- the extended Kalman filter (flexman.control.estimation: KalmanFilter.correct and .predict) ----- */

/* Doubles of scratch space the EKF's correction and prediction need. */
static long fm_ekf_work_size(int nq, int nj, int m, const fm_frames *f)
{
    long nx = 2L * nq, nz = nx + nj;
    long frames = f ? f->n * (1 + 3L * nq) + 2L * nq * nq + (long)nq * nj : 0;  /* fm_ekf_readings' (last) */
    return 3L * m * nx + (long)m * m + m + 6 * nx + 6 * nx * nz + 3L * nq * nq + (long)nq * nj + nq + nx * nx + nx * nj
           + frames;
}

/* The readings' Jacobian C (m x 2 nq) at the prediction x = (q, qd) with qdd = FD(q, qd, tau): an
   encoder's or strain gauge's row H in q; a torque sensor's row (H, Hd), its joint spring's (zero on a
   rigid joint: it reads ID(q, qd, FD(q, qd, tau)) = S tau plus the spring's torque); a frame sensor's row (Hq + Hqdd F_q,
   Hqd + Hqdd F_qd) from its program's exact Jacobians and the forward dynamics' partials
   (flexman.control.estimation._output_matrices). w: the frames' scratch of fm_ekf_work_size. */
static void fm_ekf_readings(const fm_plant *pl, const fm_sampler *s, const double *x, const double *qdd,
                            const double *tau, double *Cm, double *w)
{
    int nq = pl->nq, nj = pl->nj, nx = 2 * nq;
    const fm_frames *f = s->frames;
    for (int r = 0; r < s->m; ++r)
        for (int k = 0; k < nq; ++k) {
            Cm[(long)r * nx + k] = s->H[(long)r * nq + k];
            Cm[(long)r * nx + nq + k] = s->Hd[(long)r * nq + k];
        }
    if (!f) return;
    long fq = (long)f->n * nq;
    double *yf = w, *Hq = yf + f->n, *Hqd = Hq + fq, *Hqdd = Hqd + fq, *Fq = Hqdd + fq, *Fqd = Fq + (long)nq * nq;
    double *Ft = Fqd + (long)nq * nq;
    f->jac(x, x + nq, qdd, yf, Hq, Hqd, Hqdd);
    if (pl->has_p_partials) ((fm_fdp_p)pl->fd_partials)(1, x, x + nq, tau, pl->p, Fq, Fqd, Ft);
    else ((fm_fdp_nop)pl->fd_partials)(1, x, x + nq, tau, Fq, Fqd, Ft);
    for (int r = 0; r < s->m; ++r) {
        int a = f->at[r];
        if (a < 0) continue;
        for (int k = 0; k < nq; ++k) {
            double vq = Hq[(long)a * nq + k], vqd = Hqd[(long)a * nq + k];
            for (int j = 0; j < nq; ++j) {
                vq += Hqdd[(long)a * nq + j] * Fq[(long)j * nq + k];
                vqd += Hqdd[(long)a * nq + j] * Fqd[(long)j * nq + k];
            }
            Cm[(long)r * nx + k] = vq;
            Cm[(long)r * nx + nq + k] = vqd;
        }
    }
}

/* The correction of the prediction x (2 nq, in place) by the innovation: K = P C^T S^-1 with
   S = C P C^T + R (LDL^T), x += K innov, P_post = P - K C P (symmetrized). S is positive definite
   (R > 0); should a pivot still vanish, x turns NaN and the run stops as diverged. w: fm_ekf_work_size. */
static void fm_ekf_correct(const fm_plant *pl, const fm_sampler *s, const double *innov, const double *qdd,
                           const double *tau, double *x, double *w)
{
    const fm_ekf *e = s->ekf;
    int nq = pl->nq, nx = 2 * nq, m = s->m;
    double *Cm = w, *CP = Cm + (long)m * nx, *X = CP + (long)m * nx, *S = X + (long)m * nx, *col = S + (long)m * m;
    fm_ekf_readings(pl, s, x, qdd, tau, Cm, w + fm_ekf_work_size(nq, pl->nj, m, NULL));
    for (int r = 0; r < m; ++r)
        for (int a = 0; a < nx; ++a) {
            double v = 0.0;
            for (int k = 0; k < nx; ++k) v += Cm[(long)r * nx + k] * e->P[(long)k * nx + a];
            CP[(long)r * nx + a] = v;
        }
    for (int r = 0; r < m; ++r)
        for (int c = 0; c < m; ++c) {
            double v = 0.0;
            for (int k = 0; k < nx; ++k) v += CP[(long)r * nx + k] * Cm[(long)c * nx + k];
            S[r * m + c] = v + e->R[r * m + c];
        }
    if (fm_ldl(m, S)) {
        for (int a = 0; a < nx; ++a) x[a] = NAN;
        return;
    }
    for (int a = 0; a < nx; ++a) {  /* X = S^-1 C P, column by column: the gain is X^T */
        for (int r = 0; r < m; ++r) col[r] = CP[(long)r * nx + a];
        fm_ldl_apply(m, S, col);
        for (int r = 0; r < m; ++r) X[(long)r * nx + a] = col[r];
    }
    for (int a = 0; a < nx; ++a) {
        double v = 0.0;
        for (int r = 0; r < m; ++r) v += X[(long)r * nx + a] * innov[r];
        x[a] = x[a] + v;
        for (int b = 0; b < nx; ++b) {
            double u = 0.0;
            for (int r = 0; r < m; ++r) u += X[(long)r * nx + a] * CP[(long)r * nx + b];
            e->P_post[(long)a * nx + b] = e->P[(long)a * nx + b] - u;
        }
    }
    for (int a = 0; a < nx; ++a)
        for (int b = a + 1; b < nx; ++b) {
            double v = 0.5 * (e->P_post[(long)a * nx + b] + e->P_post[(long)b * nx + a]);
            e->P_post[(long)a * nx + b] = e->P_post[(long)b * nx + a] = v;
        }
}

/* One RK4 stage with its tangent: k = (qd, qdd) at y under tau, dk = d k / d (x, tau) from the tangent
   dy (2 nq x nz, nz = 2 nq + nj) and the forward dynamics' partials (d qdd = F_q dq + F_qd dqd + F_tau dtau). */
static void fm_ekf_stage(const fm_plant *pl, const double *y, const double *dy, const double *tau, double *k,
                         double *dk, double *w)
{
    int nq = pl->nq, nj = pl->nj, nx = 2 * nq, nz = nx + nj;
    double *Fq = w, *Fqd = Fq + (long)nq * nq, *Ft = Fqd + (long)nq * nq, *M = Ft + (long)nq * nj;
    double *b = M + (long)nq * nq;
    memcpy(k, y + nq, sizeof(double) * nq);
    fm_sampled_qdd(pl, y, y + nq, tau, k + nq, M, b);
    if (pl->has_p_partials) ((fm_fdp_p)pl->fd_partials)(1, y, y + nq, tau, pl->p, Fq, Fqd, Ft);
    else ((fm_fdp_nop)pl->fd_partials)(1, y, y + nq, tau, Fq, Fqd, Ft);
    memcpy(dk, dy + (long)nq * nz, sizeof(double) * nq * nz);
    for (int i = 0; i < nq; ++i)
        for (int c = 0; c < nz; ++c) {
            double v = 0.0;
            for (int j = 0; j < nq; ++j)
                v += Fq[i * nq + j] * dy[(long)j * nz + c] + Fqd[i * nq + j] * dy[(long)(nq + j) * nz + c];
            dk[(long)(nq + i) * nz + c] = c < nx ? v : v + Ft[i * nj + c - nx];
        }
}

/* The covariance prediction P = F P_post F^T + G W G^T, (F, G) the exact derivative of the filter's RK4
   prediction from xhat under tau in x and tau: its est_steps steps carrying their tangent
   (flexman.control.estimation.rk4_transition). w: fm_ekf_work_size. */
static void fm_ekf_predict(const fm_plant *pl, const fm_sampler *s, const double *xhat, const double *tau, double *w)
{
    const fm_ekf *e = s->ekf;
    int nq = pl->nq, nj = pl->nj, nx = 2 * nq, nz = nx + nj;
    long nd = (long)nx * nz;
    double h = s->est_period / s->est_steps;
    double *x = w, *y = x + nx, *k = y + nx, *D = k + 4L * nx, *Dy = D + nd, *dk = Dy + nd, *st = dk + 4 * nd;
    double *FP = st + 3L * nq * nq + (long)nq * nj + nq, *GW = FP + (long)nx * nx;
    memcpy(x, xhat, sizeof(double) * nx);
    for (long i = 0; i < nd; ++i) D[i] = 0.0;
    for (int i = 0; i < nx; ++i) D[(long)i * nz + i] = 1.0;
    for (int step = 0; step < s->est_steps; ++step) {
        for (int stage = 0; stage < 4; ++stage) {
            const double *at = x, *dat = D;
            if (stage) {
                double c = stage == 3 ? h : 0.5 * h;
                for (int i = 0; i < nx; ++i) y[i] = x[i] + c * k[(stage - 1) * nx + i];
                for (long i = 0; i < nd; ++i) Dy[i] = D[i] + c * dk[(stage - 1) * nd + i];
                at = y, dat = Dy;
            }
            fm_ekf_stage(pl, at, dat, tau, k + stage * nx, dk + stage * nd, st);
        }
        for (int i = 0; i < nx; ++i)
            x[i] = x[i] + h / 6.0 * (k[i] + 2.0 * k[nx + i] + 2.0 * k[2 * nx + i] + k[3 * nx + i]);
        for (long i = 0; i < nd; ++i)
            D[i] = D[i] + h / 6.0 * (dk[i] + 2.0 * dk[nd + i] + 2.0 * dk[2 * nd + i] + dk[3 * nd + i]);
    }
    for (int a = 0; a < nx; ++a)  /* F P_post and G W: F = D[:, :nx], G = D[:, nx:] */
        for (int b = 0; b < nx; ++b) {
            double v = 0.0;
            for (int c = 0; c < nx; ++c) v += D[(long)a * nz + c] * e->P_post[(long)c * nx + b];
            FP[(long)a * nx + b] = v;
            if (b < nj) {
                double u = 0.0;
                for (int c = 0; c < nj; ++c) u += D[(long)a * nz + nx + c] * e->W[c * nj + b];
                GW[(long)a * nj + b] = u;
            }
        }
    for (int a = 0; a < nx; ++a)
        for (int b = 0; b < nx; ++b) {
            double v = 0.0, u = 0.0;
            for (int c = 0; c < nx; ++c) v += FP[(long)a * nx + c] * D[(long)b * nz + c];
            for (int c = 0; c < nj; ++c) u += GW[(long)a * nj + c] * D[(long)b * nz + nx + c];
            e->P[(long)a * nx + b] = v + u;
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
    double *fw = s->frames ? (double *)calloc(fm_frames_size(s->frames, nq), sizeof(double)) : NULL;
    double *ekf_work = s->ekf ? (double *)malloc(sizeof(double) * fm_ekf_work_size(nq, nj, m, s->frames)) : NULL;
    if (!work || (s->frames && !fw) || (s->ekf && !ekf_work)) {
        free(work); free(fw); free(ekf_work); *n_out = 0; *n_samples = 0; return FM_NOMEMORY;
    }
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
            fm_sampled_h(pl, s, x, x + nq, qdd, ytrue, M, b, fw);
            if (s->frames && s->frames->max_lag) fm_frames_late(s->frames, m, nq, k, x, ytrue, fw);
            for (int r = 0; r < m; ++r) {
                double v = ytrue[r] + s->bias[r] + s->draws[k * m + r] * s->sd[r];
                y[r] = s->quantum[r] != 0.0 ? rint(v / s->quantum[r]) * s->quantum[r] : v;
            }
        }
        /* the estimate: the filter's correction, or the true state */
        if (s->gain) {
            if (s->needs_qdd) fm_sampled_qdd(pl, xbar, xbar + nq, tau_prev, qdd, M, b);
            fm_sampled_h(pl, s, xbar, xbar + nq, qdd, yh, M, b, fw);
            for (int r = 0; r < m; ++r) innov[r] = Y[k * m + r] - yh[r];
            if (s->ekf)
                fm_ekf_correct(pl, s, innov, qdd, tau_prev, xbar, ekf_work);
            else
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
        if (s->ekf) fm_ekf_predict(pl, s, xhat, tau, ekf_work);
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
    free(fw);
    free(ekf_work);
    return status ? status : (diverged ? FM_DIVERGED : FM_OK);
}
"""

_P = ctypes.POINTER(ctypes.c_double)


class Sampler(ctypes.Structure):
    _fields_ = [("m", ctypes.c_int), ("H", _P), ("Hd", _P), ("row", ctypes.POINTER(ctypes.c_int)), ("bias", _P), ("sd", _P),
                ("quantum", _P), ("draws", _P), ("gain", _P), ("est_steps", ctypes.c_int),
                ("needs_qdd", ctypes.c_int), ("est_period", ctypes.c_double), ("delay", ctypes.c_int),
                ("nz", ctypes.c_int), ("period", ctypes.c_double), ("dist_sd", _P), ("dist_draws", _P),
                ("frames", ctypes.c_void_p), ("ekf", ctypes.c_void_p)]


class Frames(ctypes.Structure):
    """``fm_frames``: the frame sensors' program and where its outputs go (see :data:`SOURCE`)."""
    _fields_ = [("eval", ctypes.c_void_p), ("jac", ctypes.c_void_p), ("n", ctypes.c_int), ("at", ctypes.POINTER(ctypes.c_int)),
                ("lag", ctypes.POINTER(ctypes.c_int)), ("frac", ctypes.POINTER(ctypes.c_double)),
                ("max_lag", ctypes.c_int)]


class Ekf(ctypes.Structure):
    """``fm_ekf``: the extended Kalman filter's covariances P, P_post (updated in place), R and W."""
    _fields_ = [("P", _P), ("P_post", _P), ("R", _P), ("W", _P)]


def type_entry_points(lib):
    """Declare ``fm_sampled_run``'s arguments on the loaded loop library."""
    vp, P, L = ctypes.c_void_p, _P, ctypes.c_long
    lib.fm_sampled_run.restype = ctypes.c_int
    lib.fm_sampled_run.argtypes = [vp, vp, vp, P, L, P, P, P, L, P, P, P, P, P, P, ctypes.POINTER(L),
                                   ctypes.POINTER(L), P, ctypes.POINTER(L), vp]
