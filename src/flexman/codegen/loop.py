"""The closed loop in C: reference trajectories, the built-in controller laws, the closed-loop
right-hand side and a whole fixed-step RK4 run in one call.

:data:`SOURCE` is plain C that works with any compiled model: the plant is a struct holding the
model's batch entry points (M and b of one state), its parameter vector and sizes; the
controller is a struct holding its gains, set-points and reference trajectory by pointer. Nothing
is baked in, so one library serves every model, gain and trajectory (changing a gain never
recompiles), and the same text can be compiled beside a model's generated source (a stand-alone
simulator, an FMU) by pointing ``fm_plant``'s functions at that model's ``fm_*_batch``.

C entry points (status codes ``FM_OK``, ``FM_SINGULAR`` (a mass-matrix block is singular), ``FM_TORQUE`` (the applied torque is not finite), ``FM_DIVERGED`` (the state became
non-finite)):

* ``fm_closed_loop_rhs(plant, control, t, x, dx, tau, work)``: ``x = [q, qd, z]`` (z: the
  controller's states, a PID's error integrals) -> ``dx`` and the applied joint torques ``tau``;
* ``fm_prescribed_rhs(plant, control, t, x, dx, tau, work)``: joints on ``control->traj``,
  ``x = [q_f, qd_f, W]`` (W: the work of the joint torques) -> ``dx`` and the torques needed;
* ``fm_rk4_run(...)``: a whole RK4 run over a time grid, sampled every ``every`` steps, stopping
  at the first fault with the samples before it (``flexman.simulate.integrators.rk4``'s rules);
* ``fm_rk4_batch(...)``: many runs, each with its own initial state and parameter vector;
* ``fm_galpha_run(...)``: a whole generalized-alpha run (implicit, A-stable, second order, with
  the high-frequency damping rho_inf) over a time grid, as ``fm_rk4_run``: the stiff arms' method.

The arithmetic follows the Python loop (``flexman.simulate``, ``flexman.control``,
``flexman.trajectory``) operation for operation where it can; where a solve is involved (the
forward dynamics, the decoupling law's flexible block) it differs by round-off only.
"""
from __future__ import annotations

import ctypes

from . import cbuild

SOURCE = r"""
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { FM_OK = 0, FM_SINGULAR = 1, FM_TORQUE = 2, FM_DIVERGED = 3, FM_NOMEMORY = 4 };
enum { FM_TRAJ_HOLD = 0, FM_TRAJ_REST_TO_REST = 1, FM_TRAJ_SPLINE = 2, FM_TRAJ_SPIN_UP = 3, FM_TRAJ_INPUT = 4,
       FM_TRAJ_FOURIER = 5 };
enum { FM_PROFILE_SINUSOIDAL = 0, FM_PROFILE_QUINTIC = 1, FM_PROFILE_CUBIC = 2 };
enum { FM_CTRL_NONE = 0, FM_CTRL_PID = 1, FM_CTRL_COMPUTED_TORQUE = 2, FM_CTRL_DECOUPLING = 3 };

/* The compiled model's batch entry points (called with n = 1), with or without the parameter vector p:
   fm_mass_matrix_batch(n, q, [p,] M), fm_bias_forces_batch(n, q, qd, [p,] b). */
typedef void (*fm_m_p)(long, const double *, const double *, double *);
typedef void (*fm_m_nop)(long, const double *, double *);
typedef void (*fm_b_p)(long, const double *, const double *, const double *, double *);
typedef void (*fm_b_nop)(long, const double *, const double *, double *);

typedef struct {
    int nq, nj;          /* coordinates, joints (the joints come first in q) */
    void *mass_matrix, *bias_forces;
    int has_p;           /* whether they take a parameter vector */
    const double *p;     /* that vector: the plant's */
    const double *p_law; /* the one a model-based law uses (the nominal model; NULL: p) */
    /* The partial derivatives of a model compiled with them (NULL: none; the implicit method then
       differentiates by forward differences): fm_forward_dynamics_derivatives_batch(n, q, qd, tau,
       [p,] dq, dqd, dtau) and fm_inverse_dynamics_derivatives_batch(n, q, qd, qdd, [p,] dq, dqd). */
    void *fd_partials, *id_partials;
    int has_p_partials;
    const int *act;      /* the coordinate each joint torque acts on (an elastic joint's motor; NULL: the joint's) */
    const double *tau_limit;  /* the drives' limits on the applied joint torques (NULL: none; INFINITY: a joint's) */
} fm_plant;

typedef void (*fm_fdp_p)(long, const double *, const double *, const double *, const double *, double *, double *,
                         double *);
typedef void (*fm_fdp_nop)(long, const double *, const double *, const double *, double *, double *, double *);
typedef void (*fm_idp_p)(long, const double *, const double *, const double *, const double *, double *, double *);
typedef void (*fm_idp_nop)(long, const double *, const double *, const double *, double *, double *);

/* A reference q_d(t), qd_d(t), qdd_d(t) of n joints (flexman.trajectory):
   rest_to_rest: a = [q0 (n), dq (n)], duration t_end;
   spin_up: a = [q0 (n), rate (n)], ramp time t_end;
   spline: a = [breaks (m + 1), c (4 m n), c1 (3 m n), c2 (2 m n)] (the PPoly coefficients of the
   spline and its two derivatives, highest power first);
   fourier: a = [q0 (n), a (n x h), b (n x h)], h = pieces harmonics, period t_end (FourierSeries);
   hold (no trajectory): q_d = qd_d = qdd_d = 0;
   input: a = [q_d (n), qd_d (n), qdd_d (n)], set-points written by the caller (an FMU's inputs).
   Shaped (n_shift > 0; flexman.control.shaping): sum_i shift_a[i] base(t - shift_t[i]), base the
   trajectory the other fields describe (an input shaper's impulses convolved with it). */
typedef struct {
    int kind, profile, n, pieces;
    double t_start, t_end;
    const double *a;
    int n_shift;
    const double *shift_t, *shift_a;
} fm_traj;

/* A built-in controller (flexman.control) plus the torque applied beside it.
   pid: kp, ki, kd (nj x nj, row-major), off_at (torques zero and integrals frozen after it; inf: never);
   computed torque: kp, kd; decoupling: gp, gv, and g_lqr (nj x 2 nq, NULL: none) from lqr_at on.
   tau_max: saturation of the controller's torque per joint (NULL: none).
   Applied torque: tau_const (nj, NULL: none) or samples tau_samples (n_samples x nj) at t_samples,
   interpolated linearly (flexman.simulate.run.torque_input). */
typedef struct {
    int kind;
    fm_traj traj;
    const double *kp, *ki, *kd, *gp, *gv, *g_lqr;
    double off_at, lqr_at;
    const double *tau_max;
    const double *tau_const;
    const double *tau_samples, *t_samples;
    long n_samples;
} fm_control;

/* tau clipped to +-limit per joint (limit NULL: unchanged): a controller's tau_max and the drives'
   torque limits (flexman.simulate.run.saturate is its Python twin). */
static void fm_saturate(int nj, double *tau, const double *limit)
{
    if (!limit) return;
    for (int j = 0; j < nj; ++j) {
        double m = limit[j];
        if (tau[j] > m) tau[j] = m; else if (tau[j] < -m) tau[j] = -m;
    }
}

/* Doubles of scratch space the right-hand sides need. */
long fm_work_size(int nq, int nj)
{
    return 3L * nq * nq + 2L * nj * nj + (long)nq * (nj + 1) + 12L * nq + 12L * nj + 16;
}

static void fm_eom(const fm_plant *pl, const double *p, const double *q, const double *qd, double *M, double *b)
{
    if (pl->has_p) {
        ((fm_m_p)pl->mass_matrix)(1, q, p, M);
        ((fm_b_p)pl->bias_forces)(1, q, qd, p, b);
    } else {
        ((fm_m_nop)pl->mass_matrix)(1, q, M);
        ((fm_b_nop)pl->bias_forces)(1, q, qd, b);
    }
}


/* LDL^T factors of the symmetric n x n matrix A (row-major, in place), without pivoting; 0 unless a
   pivot is zero (a singular mass matrix). A negative pivot is accepted, as NumPy's solve does (a
   truncated flexible model can lose definiteness at large deflections); non-finite values run on
   into the state, which the integrator then reports as diverged, as the Python loop does. */
static int fm_ldl(int n, double *A)
{
    for (int j = 0; j < n; ++j) {
        double d = A[j * n + j];
        for (int k = 0; k < j; ++k) d -= A[j * n + k] * A[j * n + k] * A[k * n + k];
        if (d == 0.0) return FM_SINGULAR;
        A[j * n + j] = d;
        for (int i = j + 1; i < n; ++i) {
            double s = A[i * n + j];
            for (int k = 0; k < j; ++k) s -= A[i * n + k] * A[j * n + k] * A[k * n + k];
            A[i * n + j] = s / d;
        }
    }
    return FM_OK;
}

/* Solve with the factors of fm_ldl: x holds the right-hand side on entry, the solution on exit.
   (The sums run in a local, in the same order: x may alias A as far as the compiler knows, so
   updating x[i] in place stored it at every term.) */
static void fm_ldl_apply(int n, const double *A, double *x)
{
    for (int i = 0; i < n; ++i) {
        double s = x[i];
        for (int k = 0; k < i; ++k) s -= A[i * n + k] * x[k];
        x[i] = s;
    }
    for (int i = 0; i < n; ++i) x[i] /= A[i * n + i];
    for (int i = n - 1; i >= 0; --i) {
        double s = x[i];
        for (int k = i + 1; k < n; ++k) s -= A[k * n + i] * x[k];
        x[i] = s;
    }
}

/* Column k of S_r - M_rf M_ff^-1 S_f (S: nq x nq, row-major; rows: the nj joints r, then the nf
   flexible f), written to out[i * stride], i < nj; Mff: the factored flexible block (fm_ldl);
   col: nf scratch. */
static void fm_eliminate_flexible(int nq, int nj, int nf, const double *M, const double *Mff, const double *S,
                                  int k, double *col, double *out, int stride)
{
    for (int m = 0; m < nf; ++m) col[m] = S[(nj + m) * nq + k];
    fm_ldl_apply(nf, Mff, col);
    for (int i = 0; i < nj; ++i) {
        double s = S[i * nq + k];
        for (int m = 0; m < nf; ++m) s -= M[i * nq + nj + m] * col[m];
        out[(long)i * stride] = s;
    }
}

/* y = G x for the n x m row-major G (a gain matrix times a vector, as NumPy's x @ G.T). */
static void fm_matvec(int n, int m, const double *G, const double *x, double *y)
{
    for (int i = 0; i < n; ++i) {
        double s = 0.0;
        for (int j = 0; j < m; ++j) s += G[i * m + j] * x[j];
        y[i] = s;
    }
}

/* ----- reference trajectories (flexman.trajectory) ----- */
static void fm_profile(int profile, double x, double *s, double *ds, double *dds)
{
    if (profile == FM_PROFILE_SINUSOIDAL) {
        const double w = 2.0 * M_PI;
        *s = x - sin(w * x) / w; *ds = 1.0 - cos(w * x); *dds = w * sin(w * x);
    } else if (profile == FM_PROFILE_QUINTIC) {
        *s = x * x * x * (10.0 - 15.0 * x + 6.0 * (x * x));
        *ds = 30.0 * (x * x) * ((1.0 - x) * (1.0 - x));
        *dds = 60.0 * x * (1.0 - x) * (1.0 - 2.0 * x);
    } else {
        *s = x * x * (3.0 - 2.0 * x); *ds = 6.0 * x * (1.0 - x); *dds = 6.0 - 12.0 * x;
    }
}

/* Value of piece i of a PPoly with k coefficients per piece at offset s (SciPy's summation order). */
static double fm_piece(const double *c, int k, int m, int n, int i, int j, double s)
{
    double res = 0.0, z = 1.0;
    for (int kp = 0; kp < k; ++kp) {
        res = res + c[((long)(k - kp - 1) * m + i) * n + j] * z;
        z *= s;
    }
    return res;
}

static void fm_trajectory_base(const fm_traj *tr, double t, double *q, double *qd, double *qdd)
{
    int n = tr->n;
    if (tr->kind == FM_TRAJ_HOLD) {
        for (int j = 0; j < n; ++j) q[j] = qd[j] = qdd[j] = 0.0;
        return;
    }
    if (tr->kind == FM_TRAJ_INPUT) {
        for (int j = 0; j < n; ++j) { q[j] = tr->a[j]; qd[j] = tr->a[n + j]; qdd[j] = tr->a[2 * n + j]; }
        return;
    }
    if (tr->kind == FM_TRAJ_SPIN_UP) {  /* Kane, Ryan & Banerjee; goes on for ever */
        const double *q0 = tr->a, *W = tr->a + n;
        double T = tr->t_end, w = 2.0 * M_PI / T, x = fmax(t, tr->t_start) - tr->t_start;
        int ramp = x < T;
        double xr = fmin(x, T);
        for (int j = 0; j < n; ++j) {
            double WT = W[j] / T;
            double qq = ramp ? WT * (xr * xr / 2.0 + (cos(w * xr) - 1.0) / (w * w)) : W[j] * (x - T / 2.0);
            q[j] = q0[j] + qq;
            qd[j] = ramp ? WT * (xr - sin(w * xr) / w) : W[j];
            qdd[j] = ramp ? WT * (1.0 - cos(w * xr)) : 0.0;
        }
        return;
    }
    if (tr->kind == FM_TRAJ_FOURIER) {  /* periodic for ever: no clipping */
        int h = tr->pieces;
        const double *q0 = tr->a, *A = tr->a + n, *B = A + (long)n * h;
        for (int j = 0; j < n; ++j) {
            double sq = 0.0, sqd = 0.0, sqdd = 0.0;
            for (int l = 1; l <= h; ++l) {
                double w = 2.0 * M_PI / tr->t_end * (double)l, x = t * w, sn = sin(x), cs = cos(x);
                double aj = A[(long)j * h + l - 1], bj = B[(long)j * h + l - 1];
                sq += (aj * sn - bj * cs) / w;
                sqd += aj * cs + bj * sn;
                sqdd += w * (-aj * sn + bj * cs);
            }
            q[j] = q0[j] + sq; qd[j] = sqd; qdd[j] = sqdd;
        }
        return;
    }
    double tc = t < tr->t_start ? tr->t_start : (t > tr->t_end ? tr->t_end : t);
    int moving = t >= tr->t_start && t <= tr->t_end;
    if (tr->kind == FM_TRAJ_REST_TO_REST) {
        const double *q0 = tr->a, *dq = tr->a + n;
        double T = tr->t_end, s, ds, dds;
        fm_profile(tr->profile, tc / T, &s, &ds, &dds);
        for (int j = 0; j < n; ++j) {
            q[j] = q0[j] + dq[j] * s;
            qd[j] = moving ? dq[j] * ds / T : 0.0;
            qdd[j] = moving ? dq[j] * dds / (T * T) : 0.0;
        }
        return;
    }
    /* spline: the piece holding tc (the last one at the end time) */
    int m = tr->pieces;
    const double *x = tr->a, *c = x + m + 1, *c1 = c + 4L * m * n, *c2 = c1 + 3L * m * n;
    int i = 0;
    while (i < m - 1 && tc >= x[i + 1]) ++i;
    double s = tc - x[i];
    for (int j = 0; j < n; ++j) {
        q[j] = fm_piece(c, 4, m, n, i, j, s);
        qd[j] = moving ? fm_piece(c1, 3, m, n, i, j, s) : 0.0;
        qdd[j] = moving ? fm_piece(c2, 2, m, n, i, j, s) : 0.0;
    }
}

void fm_trajectory(const fm_traj *tr, double t, double *q, double *qd, double *qdd)
{
    if (tr->n_shift <= 0) {
        fm_trajectory_base(tr, t, q, qd, qdd);
        return;
    }
    int n = tr->n;
    double part[3 * n + 1];  /* one impulse's copy of the base: q, qd, qdd */
    for (int j = 0; j < n; ++j) q[j] = qd[j] = qdd[j] = 0.0;
    for (int i = 0; i < tr->n_shift; ++i) {  /* in impulse order, as the Python sum adds them */
        double A = tr->shift_a[i];
        fm_trajectory_base(tr, t - tr->shift_t[i], part, part + n, part + 2 * n);
        for (int j = 0; j < n; ++j) {
            q[j] += A * part[j];
            qd[j] += A * part[n + j];
            qdd[j] += A * part[2 * n + j];
        }
    }
}

/* The applied torque beside the controller (flexman.simulate.run.torque_input). */
static void fm_applied(const fm_control *c, int nj, double t, double *tau)
{
    if (c->tau_samples) {
        const double *tg = c->t_samples;
        long n_t = c->n_samples, lo = 0, hi = n_t;  /* searchsorted(tg, t, 'right') */
        while (lo < hi) { long mid = (lo + hi) / 2; if (tg[mid] <= t) lo = mid + 1; else hi = mid; }
        long k = lo - 1;
        if (k < 0) k = 0;
        if (k > n_t - 2) k = n_t - 2;
        double w = (t - tg[k]) / (tg[k + 1] - tg[k]);
        w = w < 0.0 ? 0.0 : (w > 1.0 ? 1.0 : w);
        for (int j = 0; j < nj; ++j)
            tau[j] = (1.0 - w) * c->tau_samples[k * nj + j] + w * c->tau_samples[(k + 1) * nj + j];
    } else {
        for (int j = 0; j < nj; ++j) tau[j] = c->tau_const ? c->tau_const[j] : 0.0;
    }
}

/* The controller's joint torques at (t, q, qd, z) with M, b of the state; dz its state rates. */
static int fm_control_law(const fm_plant *pl, const fm_control *c, double t, const double *q, const double *qd,
                          const double *z, const double *M, const double *b, double *tau, double *dz, double *w)
{
    int nq = pl->nq, nj = pl->nj, nf = nq - nj;
    double *qr = w, *qdr = qr + nj, *qddr = qdr + nj, *e = qddr + nj, *ed = e + nj, *u = ed + nj;
    double *t1 = u + nj, *t2 = t1 + nj, *t3 = t2 + nj, *rest = t3 + nj;
    for (int j = 0; j < nj; ++j) tau[j] = 0.0;
    if (c->kind == FM_CTRL_NONE) return FM_OK;
    fm_trajectory(&c->traj, t, qr, qdr, qddr);
    if (c->kind == FM_CTRL_PID) {  /* tau = kp e + ki z + kd e', e = q_d - q_r; zero after off_at */
        if (t > c->off_at) {
            for (int j = 0; j < nj; ++j) dz[j] = 0.0;
            return FM_OK;
        }
        for (int j = 0; j < nj; ++j) { e[j] = qr[j] - q[j]; ed[j] = qdr[j] - qd[j]; }
        fm_matvec(nj, nj, c->kp, e, t1);
        fm_matvec(nj, nj, c->ki, z, t2);
        fm_matvec(nj, nj, c->kd, ed, t3);
        for (int j = 0; j < nj; ++j) { tau[j] = t1[j] + t2[j] + t3[j]; dz[j] = e[j]; }
    } else if (c->kind == FM_CTRL_COMPUTED_TORQUE) {  /* tau = M_rr (qdd_d + kd e' + kp e) + b_r */
        for (int j = 0; j < nj; ++j) { e[j] = qr[j] - q[j]; ed[j] = qdr[j] - qd[j]; }
        fm_matvec(nj, nj, c->kd, ed, t1);
        fm_matvec(nj, nj, c->kp, e, t2);
        for (int j = 0; j < nj; ++j) u[j] = qddr[j] + t1[j] + t2[j];
        for (int i = 0; i < nj; ++i) {
            double s = 0.0;
            for (int j = 0; j < nj; ++j) s += M[i * nq + j] * u[j];
            tau[i] = s + b[i];
        }
    } else {  /* decoupling (004 eqs. 29-37): tau = M_eq u + b_eq */
        double *Mff = rest, *X = Mff + (long)nf * nf, *Meq = X + (long)nf * (nj + 1), *beq = Meq + (long)nj * nj;
        double *dx = beq + nj;
        for (int j = 0; j < nj; ++j) { e[j] = q[j] - qr[j]; ed[j] = qd[j] - qdr[j]; }
        if (c->g_lqr && t >= c->lqr_at) {  /* u = -G dx, dx = (e, q_f, e', qd_f) */
            for (int j = 0; j < nj; ++j) { dx[j] = -e[j]; dx[nq + j] = -ed[j]; }
            for (int k = 0; k < nf; ++k) { dx[nj + k] = -q[nj + k]; dx[nq + nj + k] = -qd[nj + k]; }
            fm_matvec(nj, 2 * nq, c->g_lqr, dx, u);
        } else {
            fm_matvec(nj, nj, c->gv, ed, t1);
            fm_matvec(nj, nj, c->gp, e, t2);
            for (int j = 0; j < nj; ++j) u[j] = qddr[j] - t1[j] - t2[j];
        }
        for (int i = 0; i < nj; ++i) {
            for (int j = 0; j < nj; ++j) Meq[i * nj + j] = M[i * nq + j];
            beq[i] = b[i];
        }
        if (nf) {  /* eliminate the flexible accelerations: X = M_ff^-1 [M_fr, b_f] */
            for (int i = 0; i < nf; ++i)
                for (int k = 0; k < nf; ++k) Mff[i * nf + k] = M[(nj + i) * nq + nj + k];
            if (fm_ldl(nf, Mff)) return FM_SINGULAR;
            double *col = X;
            for (int j = 0; j <= nj; ++j, col += nf) {
                for (int i = 0; i < nf; ++i) col[i] = j < nj ? M[(nj + i) * nq + j] : b[nj + i];
                fm_ldl_apply(nf, Mff, col);
            }
            for (int i = 0; i < nj; ++i) {
                for (int j = 0; j <= nj; ++j) {
                    double s = 0.0;
                    for (int k = 0; k < nf; ++k) s += M[i * nq + nj + k] * X[(long)j * nf + k];
                    if (j < nj) Meq[i * nj + j] -= s; else beq[i] -= s;
                }
            }
        }
        for (int i = 0; i < nj; ++i) {
            double s = 0.0;
            for (int j = 0; j < nj; ++j) s += Meq[i * nj + j] * u[j];
            tau[i] = s + beq[i];
        }
    }
    fm_saturate(nj, tau, c->tau_max);
    return FM_OK;
}

static int fm_finite(int n, const double *v)
{
    for (int k = 0; k < n; ++k) if (!isfinite(v[k])) return 0;
    return 1;
}

/* Closed loop: x = [q, qd, z] -> dx = [qd, qdd, z'], tau the applied joint torques.
   qdd solves M qdd = S tau - b with the M and b the law also uses (one evaluation of each). */
int fm_closed_loop_rhs(const fm_plant *pl, const fm_control *c, double t, const double *x, double *dx,
                       double *tau, double *work)
{
    int nq = pl->nq, nj = pl->nj;
    const double *q = x, *qd = x + nq, *z = x + 2 * nq;
    double *M = work, *b = M + (long)nq * nq, *applied = b + nq, *w = applied + nj, *qdd = dx + nq;
    double *Mn = w + 10L * nj + (long)nq * nq + (long)nq * (nj + 1) + (long)nj * nj + 2L * nq, *bn = Mn + (long)nq * nq;
    const double *Ml = M, *bl = b;  /* the model the law uses */
    fm_eom(pl, pl->p, q, qd, M, b);
    if (pl->p_law && pl->p_law != pl->p && (c->kind == FM_CTRL_COMPUTED_TORQUE || c->kind == FM_CTRL_DECOUPLING)) {
        fm_eom(pl, pl->p_law, q, qd, Mn, bn);  /* a nominal model, not the plant's */
        Ml = Mn; bl = bn;
    }
    fm_applied(c, nj, t, applied);
    int status = fm_control_law(pl, c, t, q, qd, z, Ml, bl, tau, dx + 2 * nq, w);
    if (status) return status;
    for (int j = 0; j < nj; ++j) tau[j] = applied[j] + tau[j];
    fm_saturate(nj, tau, pl->tau_limit);  /* the drives' limits on the sum */
    if (!fm_finite(nj, tau)) return FM_TORQUE;
    if (pl->act) {  /* elastic joints: S tau puts a joint's torque on its motor coordinate */
        for (int i = 0; i < nq; ++i) qdd[i] = -b[i];
        for (int j = 0; j < nj; ++j) qdd[pl->act[j]] += tau[j];
    } else
        for (int i = 0; i < nq; ++i) qdd[i] = (i < nj ? tau[i] : 0.0) - b[i];
    if (fm_ldl(nq, M)) return FM_SINGULAR;
    fm_ldl_apply(nq, M, qdd);
    memcpy(dx, qd, sizeof(double) * nq);
    return FM_OK;
}

/* Prescribed joints (control->traj): x = [q_f, qd_f, W] -> dx = [qd_f, qdd_f, tau . qd_r], tau the
   joint torques the motion needs (flexman.simulate.prescribed). */
int fm_prescribed_rhs(const fm_plant *pl, const fm_control *c, double t, const double *x, double *dx,
                      double *tau, double *work)
{
    int nq = pl->nq, nj = pl->nj, nf = nq - nj;
    double *M = work, *b = M + (long)nq * nq, *q = b + nq, *qd = q + nq, *qddr = qd + nq, *Mff = qddr + nj;
    double *qddf = dx + nf;
    fm_trajectory(&c->traj, t, q, qd, qddr);
    memcpy(q + nj, x, sizeof(double) * nf);
    memcpy(qd + nj, x + nf, sizeof(double) * nf);
    fm_eom(pl, pl->p, q, qd, M, b);
    for (int i = 0; i < nf; ++i) {  /* M_ff qdd_f = -(b_f + M_fr qdd_r) */
        double s = 0.0;
        for (int j = 0; j < nj; ++j) s += M[(nj + i) * nq + j] * qddr[j];
        qddf[i] = -(b[nj + i] + s);
        for (int k = 0; k < nf; ++k) Mff[i * nf + k] = M[(nj + i) * nq + nj + k];
    }
    if (nf) {
        if (fm_ldl(nf, Mff)) return FM_SINGULAR;
        fm_ldl_apply(nf, Mff, qddf);
    }
    double power = 0.0;
    for (int i = 0; i < nj; ++i) {  /* tau = M_rr qdd_r + M_rf qdd_f + b_r */
        double s1 = 0.0, s2 = 0.0;
        for (int j = 0; j < nj; ++j) s1 += M[i * nq + j] * qddr[j];
        for (int k = 0; k < nf; ++k) s2 += M[i * nq + nj + k] * qddf[k];
        tau[i] = s1 + s2 + b[i];
        power += tau[i] * qd[i];
    }
    if (!fm_finite(nj, tau)) return FM_TORQUE;
    memcpy(dx, x + nf, sizeof(double) * nf);
    dx[2 * nf] = power;
    return FM_OK;
}

typedef int (*fm_rhs)(const fm_plant *, const fm_control *, double, const double *, double *, double *, double *);

/* After step k: the new state x, when finite, is sample j (every `every`-th step and the last);
   1 (and *t_fault = t_next) when it is not. */
static int fm_keep(const double *x, int nx, long k, long n_t, long every, double *X, long *j, double t_next,
                   double *t_fault)
{
    if (!fm_finite(nx, x)) { *t_fault = t_next; return 1; }
    if ((k + 1) % every == 0 || k + 1 == n_t - 1) {
        memcpy(X + *j * nx, x, sizeof(double) * nx);
        ++*j;
    }
    return 0;
}

/* The torque at the last of the j samples, evaluated there (NaN where it cannot be); returns j. */
static long fm_last_torque(fm_rhs f, const fm_plant *pl, const fm_control *c, int status, const double *t, long n_t,
                           long every, long j, const double *X, int nx, double *TAU, double *tau, double *scratch,
                           double *work)
{
    const double *last = X + (j - 1) * nx;
    double t_last = status ? t[(j - 1) * every] : t[n_t - 1];
    for (int i = 0; i < pl->nj; ++i) tau[i] = NAN;
    f(pl, c, t_last, last, scratch, tau, work);
    memcpy(TAU + (j - 1) * pl->nj, tau, sizeof(double) * pl->nj);
    return j;
}

/* One RK4 run over the grid t[0..n_t-1] from x0 (nx values). Every `every`-th grid time (and the
   last) is a sample: X (rows of nx) and TAU (rows of nj, the torque at the start of the step; at
   the last sample evaluated there). Returns FM_OK, or the fault that ended the run; *n_out: the
   samples written (after a fault: those before it), *t_fault: when the fault was met. */
static int fm_rk4_with(fm_rhs f, const fm_plant *pl, const fm_control *c, const double *t, long n_t,
                       const double *x0, int nx, long every, double *X, double *TAU, long *n_out, double *t_fault);

int fm_rk4_run(const fm_plant *pl, const fm_control *c, int prescribed, const double *t, long n_t,
               const double *x0, int nx, long every, double *X, double *TAU, long *n_out, double *t_fault)
{
    return fm_rk4_with(prescribed ? fm_prescribed_rhs : fm_closed_loop_rhs, pl, c, t, n_t, x0, nx, every, X, TAU,
                       n_out, t_fault);
}

/* fm_rk4_run with the right-hand side f (a reduced model's: flexman.codegen.loop_reduced). */
static int fm_rk4_with(fm_rhs f, const fm_plant *pl, const fm_control *c, const double *t, long n_t,
                       const double *x0, int nx, long every, double *X, double *TAU, long *n_out, double *t_fault)
{
    int nj = pl->nj;
    double *work = (double *)malloc(sizeof(double) * (fm_work_size(pl->nq, nj) + 6L * nx + nj));
    if (!work) { *n_out = 0; return FM_NOMEMORY; }
    double *k1 = work + fm_work_size(pl->nq, nj), *k2 = k1 + nx, *k3 = k2 + nx, *k4 = k3 + nx;
    double *y = k4 + nx, *x = y + nx, *tau = x + nx;
    int status = FM_OK;
    long j = 1;  /* samples written: the initial state is the first */
    memcpy(x, x0, sizeof(double) * nx);
    memcpy(X, x, sizeof(double) * nx);
    for (long k = 0; k < n_t - 1; ++k) {
        double tk = t[k], h = t[k + 1] - t[k];
        if ((status = f(pl, c, tk, x, k1, tau, work))) { *t_fault = tk; break; }
        if (k % every == 0) memcpy(TAU + (j - 1) * nj, tau, sizeof(double) * nj);
        for (int i = 0; i < nx; ++i) y[i] = x[i] + 0.5 * h * k1[i];
        if ((status = f(pl, c, tk + 0.5 * h, y, k2, tau, work))) { *t_fault = tk; break; }
        for (int i = 0; i < nx; ++i) y[i] = x[i] + 0.5 * h * k2[i];
        if ((status = f(pl, c, tk + 0.5 * h, y, k3, tau, work))) { *t_fault = tk; break; }
        for (int i = 0; i < nx; ++i) y[i] = x[i] + h * k3[i];
        if ((status = f(pl, c, tk + h, y, k4, tau, work))) { *t_fault = tk; break; }
        for (int i = 0; i < nx; ++i) x[i] = x[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        if (fm_keep(x, nx, k, n_t, every, X, &j, tk + h, t_fault)) { status = FM_DIVERGED; break; }
    }
    *n_out = fm_last_torque(f, pl, c, status, t, n_t, every, j, X, nx, TAU, tau, k1, work);
    free(work);
    return status;
}

/* Dense LU with partial pivoting of the n x n matrix A (row-major, in place); piv: n ints.
   Returns 0, or 1 when a pivot vanishes. */
static int fm_lu(int n, double *A, int *piv)
{
    for (int k = 0; k < n; ++k) {
        int p = k;
        double best = fabs(A[k * n + k]);
        for (int i = k + 1; i < n; ++i)
            if (fabs(A[i * n + k]) > best) { best = fabs(A[i * n + k]); p = i; }
        piv[k] = p;
        if (!(best > 0.0)) return 1;
        if (p != k)
            for (int j = 0; j < n; ++j) { double tmp = A[k * n + j]; A[k * n + j] = A[p * n + j]; A[p * n + j] = tmp; }
        for (int i = k + 1; i < n; ++i) {
            double m = A[i * n + k] /= A[k * n + k];
            for (int j = k + 1; j < n; ++j) A[i * n + j] -= m * A[k * n + j];
        }
    }
    return 0;
}

static void fm_lu_solve(int n, const double *A, const int *piv, double *b)
{
    for (int k = 0; k < n; ++k)  /* P b first (the rows of L were swapped with the rest) */
        if (piv[k] != k) { double tmp = b[k]; b[k] = b[piv[k]]; b[piv[k]] = tmp; }
    for (int k = 0; k < n; ++k)
        for (int i = k + 1; i < n; ++i) b[i] -= A[i * n + k] * b[k];
    for (int k = n - 1; k >= 0; --k) {
        for (int j = k + 1; j < n; ++j) b[k] -= A[k * n + j] * b[j];
        b[k] /= A[k * n + k];
    }
}

/* J = df/dx at (t, x) by forward differences (n + 1 right-hand sides; f0 = f(t, x) given). */
static int fm_jacobian(fm_rhs f, const fm_plant *pl, const fm_control *c, double t, const double *x, const double *f0,
                       int nx, double *J, double *xp, double *fp, double *tau, double *work)
{
    memcpy(xp, x, sizeof(double) * nx);
    for (int j = 0; j < nx; ++j) {
        double h = 1.4901161193847656e-08 * (fabs(x[j]) > 1.0 ? fabs(x[j]) : 1.0);
        xp[j] = x[j] + h;
        int status = f(pl, c, t, xp, fp, tau, work);
        if (status) return status;
        for (int i = 0; i < nx; ++i) J[i * nx + j] = (fp[i] - f0[i]) / h;
        xp[j] = x[j];
    }
    return FM_OK;
}

/* Doubles of scratch space fm_jacobian_analytic needs. */
static long fm_partials_work(int nq, int nj)
{
    return 6L * nq * nq + 3L * nq * nj + 2L * nj * nj + 10L * nq + 8L * nj + 8;
}

/* The built-in law's partial derivatives at the (full) state (q, qd) and its states z, tau the applied
   torque there: d tau = T_q dq + T_qd dqd + T_z dz (T_q, T_qd: nj x nq; T_z: nj x nj). PID: -kp, -kd,
   ki; computed torque tau = ID_r(q, qd, [u; 0]) with u = qdd_d + kd e' + kp e, so T = d ID_r/d(q, qd)
   - M_rr (kp, kd) on the joints; decoupling: see its branch; a saturated joint's row is 0. *pid_on:
   whether a PID's integrals run (z' = q_d - q_r). w: 4 nq^2 + nj^2 + 6 nq + 3 nj doubles of scratch.
   Shared by the full model's Jacobian and a reduced model's (flexman.codegen.loop_reduced). */
static int fm_law_partials(const fm_plant *pl, const fm_control *c, double t, const double *qx, const double *qdx,
                           const double *tau, double *Tq, double *Tqd, double *Tz, double *w, int *pid_on)
{
    int nq = pl->nq, nj = pl->nj, nf = nq - nj;
    double *Dq = w, *Dqd = Dq + (long)nq * nq, *M = Dqd + (long)nq * nq, *b = M + (long)nq * nq;
    double *qr = b + nq, *qdr = qr + nq, *qddr = qdr + nq, *a = qddr + nq, *e = a + nq, *ed = e + nj;
    double *applied = ed + nj, *col = applied + nj;
#define FM_ID_PARTIALS(P, Q, QD, QDD) (pl->has_p_partials ? ((fm_idp_p)pl->id_partials)(1, Q, QD, QDD, P, Dq, Dqd) \
                                       : ((fm_idp_nop)pl->id_partials)(1, Q, QD, QDD, Dq, Dqd))
    for (long i = 0; i < (long)nj * nq; ++i) { Tq[i] = 0.0; Tqd[i] = 0.0; }
    for (long i = 0; i < (long)nj * nj; ++i) Tz[i] = 0.0;
    *pid_on = c->kind == FM_CTRL_PID && !(t > c->off_at);
    if (*pid_on) {
        for (int i = 0; i < nj; ++i)
            for (int j = 0; j < nj; ++j) {
                Tq[i * nq + j] = -c->kp[i * nj + j];
                Tqd[i * nq + j] = -c->kd[i * nj + j];
                Tz[i * nj + j] = c->ki[i * nj + j];
            }
    } else if (c->kind == FM_CTRL_COMPUTED_TORQUE) {
        const double *pp = pl->p_law ? pl->p_law : pl->p;
        fm_trajectory(&c->traj, t, qr, qdr, qddr);
        for (int j = 0; j < nj; ++j) { e[j] = qr[j] - qx[j]; ed[j] = qdr[j] - qdx[j]; }
        for (int i = 0; i < nq; ++i) a[i] = 0.0;
        for (int i = 0; i < nj; ++i) {
            double s1 = 0.0, s2 = 0.0;
            for (int j = 0; j < nj; ++j) { s1 += c->kd[i * nj + j] * ed[j]; s2 += c->kp[i * nj + j] * e[j]; }
            a[i] = qddr[i] + s1 + s2;
        }
        FM_ID_PARTIALS(pp, qx, qdx, a);
        fm_eom(pl, pp, qx, qdx, M, b);
        for (int i = 0; i < nj; ++i)
            for (int k = 0; k < nq; ++k) {
                double mp = 0.0, md = 0.0;
                if (k < nj)
                    for (int j = 0; j < nj; ++j) { mp += M[i * nq + j] * c->kp[j * nj + k]; md += M[i * nq + j] * c->kd[j * nj + k]; }
                Tq[i * nq + k] = Dq[i * nq + k] - mp;
                Tqd[i * nq + k] = Dqd[i * nq + k] - md;
            }
    } else if (c->kind == FM_CTRL_DECOUPLING) {
        /* The law (fm_control_law) is tau = M_eq u + b_eq = ID_r(q, qd, a) with a = [u; a_f] and a_f
           solving ID_f(q, qd, a) = M_fr u + M_ff a_f + b_f = 0 (its elimination of the flexible
           accelerations). With D = d ID / d(q, qd) at that a (the law's model), the chain rule gives
             d tau = D_r dx + M_rr du + M_rf da_f,  da_f = -M_ff^-1 (D_f dx + M_fr du),
           so T = (D_r - M_rf M_ff^-1 D_f) + M_eq du/d(q, qd), M_eq = M_rr - M_rf M_ff^-1 M_fr, and
           du/d(q, qd) = -(gp, gv) on the joints (u = qdd_d - gv e' - gp e), or -G after lqr_at
           (u = -G (q - [q_d; 0], qd - [qd_d; 0])). */
        const double *pp = pl->p_law ? pl->p_law : pl->p, *G = c->g_lqr;
        int lqr = G && t >= c->lqr_at;
        double *Mff = col + nq, *Meq = Mff + (long)nq * nq;
        fm_trajectory(&c->traj, t, qr, qdr, qddr);
        for (int j = 0; j < nj; ++j) { e[j] = qx[j] - qr[j]; ed[j] = qdx[j] - qdr[j]; }
        for (int i = 0; i < nj; ++i) {  /* a_r = u */
            double s1 = 0.0;
            if (lqr) {
                for (int k = 0; k < nq; ++k)
                    s1 += G[(long)i * 2 * nq + k] * (k < nj ? e[k] : qx[k])
                          + G[(long)i * 2 * nq + nq + k] * (k < nj ? ed[k] : qdx[k]);
                a[i] = -s1;
            } else {
                for (int j = 0; j < nj; ++j) s1 += c->gv[i * nj + j] * ed[j] + c->gp[i * nj + j] * e[j];
                a[i] = qddr[i] - s1;
            }
        }
        fm_eom(pl, pp, qx, qdx, M, b);
        for (int i = 0; i < nf; ++i) {  /* a_f = -M_ff^-1 (M_fr u + b_f) */
            double s1 = b[nj + i];
            for (int j = 0; j < nj; ++j) s1 += M[(nj + i) * nq + j] * a[j];
            col[i] = -s1;
            for (int k = 0; k < nf; ++k) Mff[i * nf + k] = M[(nj + i) * nq + nj + k];
        }
        if (nf && fm_ldl(nf, Mff)) return FM_SINGULAR;
        fm_ldl_apply(nf, Mff, col);
        memcpy(a + nj, col, sizeof(double) * nf);
        FM_ID_PARTIALS(pp, qx, qdx, a);
        for (int j = 0; j < nj; ++j)  /* M_eq = M_rr - M_rf M_ff^-1 M_fr */
            fm_eliminate_flexible(nq, nj, nf, M, Mff, M, j, col, Meq + j, nj);
        for (int k = 0; k < nq; ++k) {  /* D_r - M_rf M_ff^-1 D_f, of the q and of the qd partials */
            fm_eliminate_flexible(nq, nj, nf, M, Mff, Dq, k, col, Tq + k, nq);
            fm_eliminate_flexible(nq, nj, nf, M, Mff, Dqd, k, col, Tqd + k, nq);
        }
        for (int i = 0; i < nj; ++i)  /* + M_eq du/d(q, qd) */
            for (int k = 0; k < nq; ++k) {
                double sq = 0.0, sqd = 0.0;
                for (int j = 0; j < nj; ++j) {
                    double uq = lqr ? -G[(long)j * 2 * nq + k] : (k < nj ? -c->gp[j * nj + k] : 0.0);
                    double uqd = lqr ? -G[(long)j * 2 * nq + nq + k] : (k < nj ? -c->gv[j * nj + k] : 0.0);
                    sq += Meq[i * nj + j] * uq;
                    sqd += Meq[i * nj + j] * uqd;
                }
                Tq[i * nq + k] += sq;
                Tqd[i * nq + k] += sqd;
            }
    }
#undef FM_ID_PARTIALS
    if (c->tau_max && c->kind != FM_CTRL_NONE) {  /* a saturated law's torque does not move with the state */
        fm_applied(c, nj, t, applied);
        for (int i = 0; i < nj; ++i)
            if (fabs(tau[i] - applied[i]) >= c->tau_max[i]) {
                for (int k = 0; k < nq; ++k) { Tq[i * nq + k] = 0.0; Tqd[i * nq + k] = 0.0; }
                for (int k = 0; k < nj; ++k) Tz[i * nj + k] = 0.0;
            }
    }
    if (pl->tau_limit && c->kind != FM_CTRL_NONE)  /* nor does a torque at a drive's limit */
        for (int i = 0; i < nj; ++i)
            if (fabs(tau[i]) >= pl->tau_limit[i]) {
                for (int k = 0; k < nq; ++k) { Tq[i * nq + k] = 0.0; Tqd[i * nq + k] = 0.0; }
                for (int k = 0; k < nj; ++k) Tz[i * nj + k] = 0.0;
            }
    return FM_OK;
}

/* J = df/dx from the model's partial derivatives (flexman.dynamics.derivatives) and the law's own:
   closed loop x = [q, qd, z]: d qdd = F_q dq + F_qd dqd + F_tau (T_q dq + T_qd dqd + T_z dz), with
   F the forward dynamics' partials at the applied torque tau and T the law's (fm_law_partials);
   prescribed x = [q_f, qd_f, W]: qdd_f solves ID_f(q, qd, qdd) = 0, so d qdd_f = -M_ff^-1 d ID_f,
   and W' = qd_r . ID_r. Returns -1 when it cannot (no partials in the model): the caller
   differentiates by forward differences. tau: the applied torque at (t, x) (what f returned there). */
static int fm_jacobian_analytic(const fm_plant *pl, const fm_control *c, int prescribed, double t, const double *x,
                                const double *f0, const double *tau, int nx, double *J, double *s)
{
    int nq = pl->nq, nj = pl->nj, nf = nq - nj;
    if (!pl->id_partials || (!prescribed && !pl->fd_partials)) return -1;
    for (long i = 0; i < (long)nx * nx; ++i) J[i] = 0.0;
    if (prescribed) {
        double *Dq = s, *Dqd = Dq + (long)nq * nq, *M = Dqd + (long)nq * nq, *b = M + (long)nq * nq;
        double *Fq = b + nq, *Fqd = Fq + (long)nq * nq, *Ft = Fqd + (long)nq * nq, *q = Ft + (long)nq * nq;
        double *qd = q + nq, *qddr = qd + nq, *a = qddr + nq, *col = a + nq;
#define FM_ID_PARTIALS(P, Q, QD, QDD) (pl->has_p_partials ? ((fm_idp_p)pl->id_partials)(1, Q, QD, QDD, P, Dq, Dqd) \
                                       : ((fm_idp_nop)pl->id_partials)(1, Q, QD, QDD, Dq, Dqd))
        fm_trajectory(&c->traj, t, q, qd, qddr);
        memcpy(q + nj, x, sizeof(double) * nf);
        memcpy(qd + nj, x + nf, sizeof(double) * nf);
        memcpy(a, qddr, sizeof(double) * nj);
        memcpy(a + nj, f0 + nf, sizeof(double) * nf);
        FM_ID_PARTIALS(pl->p, q, qd, a);
        fm_eom(pl, pl->p, q, qd, M, b);
        double *Mff = Fq, *X1 = Fqd, *X2 = Ft;  /* (scratch reused) X = -M_ff^-1 d ID_f / d(q_f, qd_f) */
        for (int i = 0; i < nf; ++i)
            for (int k = 0; k < nf; ++k) Mff[i * nf + k] = M[(nj + i) * nq + nj + k];
        if (nf && fm_ldl(nf, Mff)) return FM_SINGULAR;
        for (int k = 0; k < nf; ++k) {
            for (int i = 0; i < nf; ++i) col[i] = -Dq[(nj + i) * nq + nj + k];
            fm_ldl_apply(nf, Mff, col);
            for (int i = 0; i < nf; ++i) X1[i * nf + k] = col[i];
            for (int i = 0; i < nf; ++i) col[i] = -Dqd[(nj + i) * nq + nj + k];
            fm_ldl_apply(nf, Mff, col);
            for (int i = 0; i < nf; ++i) X2[i * nf + k] = col[i];
        }
        for (int i = 0; i < nf; ++i) {
            J[(long)i * nx + nf + i] = 1.0;
            for (int k = 0; k < nf; ++k) {
                J[(long)(nf + i) * nx + k] = X1[i * nf + k];
                J[(long)(nf + i) * nx + nf + k] = X2[i * nf + k];
            }
        }
        for (int k = 0; k < nf; ++k) {  /* W' = sum_r qd_r tau_r, tau_r = ID_r(q, qd, qdd(x)) */
            double wq = 0.0, wqd = 0.0;
            for (int r = 0; r < nj; ++r) {
                double sq = Dq[r * nq + nj + k], sqd = Dqd[r * nq + nj + k];
                for (int m = 0; m < nf; ++m) {
                    sq += M[r * nq + nj + m] * X1[m * nf + k];
                    sqd += M[r * nq + nj + m] * X2[m * nf + k];
                }
                wq += qd[r] * sq;
                wqd += qd[r] * sqd;
            }
            J[(long)(2 * nf) * nx + k] = wq;
            J[(long)(2 * nf) * nx + nf + k] = wqd;
        }
        return FM_OK;
    }
#undef FM_ID_PARTIALS
    int nz = nx - 2 * nq, pid_on = 0, status;
    const double *qx = x, *qdx = x + nq;
    double *Fq = s, *Fqd = Fq + (long)nq * nq, *Ft = Fqd + (long)nq * nq, *Tq = Ft + (long)nq * nj;
    double *Tqd = Tq + (long)nj * nq, *Tz = Tqd + (long)nj * nq, *w = Tz + (long)nj * nj;
    if (pl->has_p_partials) ((fm_fdp_p)pl->fd_partials)(1, qx, qdx, tau, pl->p, Fq, Fqd, Ft);
    else ((fm_fdp_nop)pl->fd_partials)(1, qx, qdx, tau, Fq, Fqd, Ft);
    if ((status = fm_law_partials(pl, c, t, qx, qdx, tau, Tq, Tqd, Tz, w, &pid_on))) return status;
    for (int i = 0; i < nq; ++i) {
        J[(long)i * nx + nq + i] = 1.0;
        double *row = J + (long)(nq + i) * nx;
        for (int k = 0; k < nq; ++k) {
            double sq = Fq[i * nq + k], sqd = Fqd[i * nq + k];
            for (int j = 0; j < nj; ++j) { sq += Ft[i * nj + j] * Tq[j * nq + k]; sqd += Ft[i * nj + j] * Tqd[j * nq + k]; }
            row[k] = sq;
            row[nq + k] = sqd;
        }
        for (int m = 0; m < nz && m < nj; ++m) {
            double sz = 0.0;
            for (int j = 0; j < nj; ++j) sz += Ft[i * nj + j] * Tz[j * nj + m];
            row[2 * nq + m] = sz;
        }
    }
    if (pid_on)
        for (int j = 0; j < nz && j < nj; ++j) J[(long)(2 * nq + j) * nx + j] = -1.0;  /* z' = q_d - q_r */
    return FM_OK;
}

/* An analytic Jacobian (fm_jacobian_analytic's arguments; a reduced model's: fm_reduced_jacobian). */
typedef int (*fm_jac)(const fm_plant *, const fm_control *, int, double, const double *, const double *,
                      const double *, int, double *, double *);

/* J by jac, the partial derivatives, when the model has them (counted in *analytic), else forward differences. */
static int fm_jacobian_any(fm_rhs f, fm_jac jac, const fm_plant *pl, const fm_control *c, int prescribed, double t,
                           const double *x, const double *f0, const double *tau, int nx, double *J, double *xp,
                           double *fp, double *tau_scratch, double *work, double *s, long *analytic)
{
    int status = jac(pl, c, prescribed, t, x, f0, tau, nx, J, s);
    if (status >= 0) {
        if (status == FM_OK) ++*analytic;
        return status;
    }
    return fm_jacobian(f, pl, c, t, x, f0, nx, J, xp, fp, tau_scratch, work);
}

/* J = df/dx of the run's right-hand side at (t, x): from the partial derivatives (analytic = 1;
   -1 when they cannot be used) or by forward differences (analytic = 0). For the tests. */
int fm_loop_jacobian(const fm_plant *pl, const fm_control *c, int prescribed, double t, const double *x, int nx,
                     int analytic, double *J)
{
    fm_rhs f = prescribed ? fm_prescribed_rhs : fm_closed_loop_rhs;
    long ws = fm_work_size(pl->nq, pl->nj);
    double *work = (double *)malloc(sizeof(double) * (ws + fm_partials_work(pl->nq, pl->nj) + 3L * nx + 2L * pl->nj));
    if (!work) return FM_NOMEMORY;
    double *f0 = work + ws, *xp = f0 + nx, *fp = xp + nx, *tau = fp + nx, *tau_fd = tau + pl->nj, *s = tau_fd + pl->nj;
    int status = f(pl, c, t, x, f0, tau, work);
    if (!status)
        status = analytic ? fm_jacobian_analytic(pl, c, prescribed, t, x, f0, tau, nx, J, s)
                          : fm_jacobian(f, pl, c, t, x, f0, nx, J, xp, fp, tau_fd, work);
    free(work);
    return status;
}

/* One generalized-alpha run (Jansen, Whiting & Hulbert 2000: the first-order form of Chung &
   Hulbert's method, the family structural codes integrate flexible bodies with) over the grid t,
   the arguments and results as fm_rk4_run's. Second order, A-stable; rho_inf in [0, 1] is the
   spectral radius at infinite step: 1 keeps every mode (the trapezoidal rule), 0 damps the
   unresolved ones in one step. Each step solves the implicit stage by Newton's method on the
   rates, with the iteration matrix alpha_m I - alpha_f gamma h J and J = df/dx of the closed
   loop (plant and controller together) at the step's start, refreshed when an iteration slows
   down. FM_DIVERGED also when Newton fails to converge. *iterations: Newton iterations in all. */
/* Doubles of scratch space fm_galpha_step needs (ints: nx more for the pivots). */
long fm_galpha_scratch(int nq, int nj, int nx)
{
    return fm_work_size(nq, nj) + fm_partials_work(nq, nj) + 7L * nx + 2L * nx * nx + nj;
}

/* One generalized-alpha step of length h from (tk, x) (x advanced in place), f0 = f(tk, x) and tau
   the torque there; vn: the rates of the last step (the predictor; the first step's: f0), the new
   ones on return. s: fm_galpha_scratch doubles, piv: nx ints. FM_DIVERGED when Newton does not
   converge; x is then unchanged. */
static int fm_galpha_step_with(fm_rhs f, fm_jac jac, int prescribed, const fm_plant *pl, const fm_control *c,
                               double tk, double h, double rho_inf, double *x, double *vn, const double *f0,
                               double *tau, int nx, double *s, int *piv, long *iterations, long *jacobians,
                               long *analytic);

int fm_galpha_step(int prescribed, const fm_plant *pl, const fm_control *c, double tk, double h, double rho_inf,
                   double *x, double *vn, const double *f0, double *tau, int nx, double *s, int *piv,
                   long *iterations, long *jacobians, long *analytic)
{
    return fm_galpha_step_with(prescribed ? fm_prescribed_rhs : fm_closed_loop_rhs, fm_jacobian_analytic, prescribed,
                               pl, c, tk, h, rho_inf, x, vn, f0, tau, nx, s, piv, iterations, jacobians, analytic);
}

/* fm_galpha_step with the right-hand side f and its analytic Jacobian jac (a reduced model's). */
static int fm_galpha_step_with(fm_rhs f, fm_jac jac, int prescribed, const fm_plant *pl, const fm_control *c,
                               double tk, double h, double rho_inf, double *x, double *vn, const double *f0,
                               double *tau, int nx, double *s, int *piv, long *iterations, long *jacobians,
                               long *analytic)
{
    int nj = pl->nj, status = FM_OK;
    double am = 0.5 * (3.0 - rho_inf) / (1.0 + rho_inf), af = 1.0 / (1.0 + rho_inf), gm = 0.5 + am - af;
    double ta = tk + af * h;
    double *work = s, *ps_work = work + fm_work_size(pl->nq, nj), *v = ps_work + fm_partials_work(pl->nq, nj);
    double *xa = v + nx, *fa = xa + nx, *r = fa + nx, *xp = r + nx, *fp = xp + nx, *J = fp + nx;
    double *A = J + (long)nx * nx, *tau_fd = A + (long)nx * nx;
    if ((status = fm_jacobian_any(f, jac, pl, c, prescribed, tk, x, f0, tau, nx, J, xp, fp, tau_fd, work, ps_work,
                                  analytic))) return status;
    ++*jacobians;
    for (int i = 0; i < nx * nx; ++i) A[i] = -af * gm * h * J[i];
    for (int i = 0; i < nx; ++i) A[i * nx + i] += am;
    if (fm_lu(nx, A, piv)) return FM_SINGULAR;
    memcpy(v, vn, sizeof(double) * nx);  /* predictor: the rates of the last step */
    int converged = 0, refreshed = 0;
    double last = INFINITY;
    for (int it = 0; it < 40; ++it) {
        for (int i = 0; i < nx; ++i)
            xa[i] = x[i] + af * h * ((1.0 - gm) * vn[i] + gm * v[i]);
        if ((status = f(pl, c, ta, xa, fa, tau, work))) return status;
        double size = 0.0;
        for (int i = 0; i < nx; ++i) {
            r[i] = fa[i] - (vn[i] + am * (v[i] - vn[i]));
        }
        fm_lu_solve(nx, A, piv, r);
        for (int i = 0; i < nx; ++i) {  /* the state's change, per component, relative to 1 + |x_i| + h |v_i| */
            v[i] += r[i];
            double change = h * fabs(r[i]) / (1.0 + fabs(x[i]) + h * fabs(v[i]));
            if (!(change <= size)) size = change;  /* NaN propagates */
        }
        ++*iterations;
        if (!(size == size)) return FM_DIVERGED;
        if (size <= 1e-12) { converged = 1; break; }  /* NEWTON_TOL of flexman.simulate.integrators */
        if (size > 0.5 * last && !refreshed) {  /* slow: the Jacobian at this iterate (fa = f there) */
            if ((status = fm_jacobian_any(f, jac, pl, c, prescribed, ta, xa, fa, tau, nx, J, xp, fp, tau_fd, work,
                                          ps_work, analytic))) return status;
            ++*jacobians;
            for (int i = 0; i < nx * nx; ++i) A[i] = -af * gm * h * J[i];
            for (int i = 0; i < nx; ++i) A[i * nx + i] += am;
            if (fm_lu(nx, A, piv)) return FM_SINGULAR;
            refreshed = 1;
        }
        last = size;
    }
    if (!converged) return FM_DIVERGED;
    for (int i = 0; i < nx; ++i) {
        x[i] += h * ((1.0 - gm) * vn[i] + gm * v[i]);
        vn[i] = v[i];
    }
    return FM_OK;
}

/* One generalized-alpha run (Jansen, Whiting & Hulbert 2000: the first-order form of Chung &
   Hulbert's method, the family structural codes integrate flexible bodies with) over the grid t,
   the arguments and results as fm_rk4_run's. Second order, A-stable; rho_inf in [0, 1] is the
   spectral radius at infinite step: 1 keeps every mode (the trapezoidal rule), 0 damps the
   unresolved ones in one step. Each step (fm_galpha_step) solves the implicit stage by Newton's
   method on the rates, with the iteration matrix alpha_m I - alpha_f gamma h J and J = df/dx of
   the closed loop (plant and controller together) at the step's start, refreshed when an
   iteration slows down. FM_DIVERGED also when Newton fails to converge. *iterations: Newton
   iterations in all. */
static int fm_galpha_with(fm_rhs f, fm_jac jac, const fm_plant *pl, const fm_control *c, int prescribed,
                          const double *t, long n_t, const double *x0, int nx, long every, double rho_inf, double *X,
                          double *TAU, long *n_out, double *t_fault, long *iterations, long *jacobians,
                          long *analytic);

int fm_galpha_run(const fm_plant *pl, const fm_control *c, int prescribed, const double *t, long n_t,
                  const double *x0, int nx, long every, double rho_inf, double *X, double *TAU, long *n_out,
                  double *t_fault, long *iterations, long *jacobians, long *analytic)
{
    return fm_galpha_with(prescribed ? fm_prescribed_rhs : fm_closed_loop_rhs, fm_jacobian_analytic, pl, c, prescribed,
                          t, n_t, x0, nx, every, rho_inf, X, TAU, n_out, t_fault, iterations, jacobians, analytic);
}

/* fm_galpha_run with the right-hand side f (a reduced model's: flexman.codegen.loop_reduced). */
static int fm_galpha_with(fm_rhs f, fm_jac jac, const fm_plant *pl, const fm_control *c, int prescribed,
                          const double *t, long n_t, const double *x0, int nx, long every, double rho_inf, double *X,
                          double *TAU, long *n_out, double *t_fault, long *iterations, long *jacobians,
                          long *analytic)
{
    int nj = pl->nj;
    long ss = fm_galpha_scratch(pl->nq, nj, nx);
    double *mem = (double *)malloc(sizeof(double) * (ss + 3L * nx + nj));
    int *piv = (int *)malloc(sizeof(int) * (nx > 0 ? nx : 1));
    if (!mem || !piv) { free(mem); free(piv); *n_out = 0; return FM_NOMEMORY; }
    double *work = mem, *x = mem + ss, *vn = x + nx, *f0 = vn + nx, *tau = f0 + nx;
    int status = FM_OK;
    long j = 1;
    *iterations = 0;
    *jacobians = 0;
    *analytic = 0;
    memcpy(x, x0, sizeof(double) * nx);
    memcpy(X, x, sizeof(double) * nx);
    for (long k = 0; k < n_t - 1; ++k) {
        double tk = t[k], h = t[k + 1] - t[k];
        /* the rates at the step's start (and the torque there, at a sample), then the step */
        if ((status = f(pl, c, tk, x, f0, tau, work))) { *t_fault = tk; break; }
        if (k % every == 0) memcpy(TAU + (j - 1) * nj, tau, sizeof(double) * nj);
        if (k == 0) memcpy(vn, f0, sizeof(double) * nx);  /* the first step's predictor: the start's rates */
        if ((status = fm_galpha_step_with(f, jac, prescribed, pl, c, tk, h, rho_inf, x, vn, f0, tau, nx, work, piv,
                                          iterations, jacobians, analytic))) { *t_fault = tk; break; }
        if (fm_keep(x, nx, k, n_t, every, X, &j, tk + h, t_fault)) { status = FM_DIVERGED; break; }
    }
    *n_out = fm_last_torque(f, pl, c, status, t, n_t, every, j, X, nx, TAU, tau, f0, work);
    free(mem);
    free(piv);
    return status;
}

/* n_runs runs of one plant and controller on one grid: initial states X0 (n_runs x nx), parameter
   vectors P (n_runs x n_p; NULL: the plant's own) of the plants (a model-based law keeps p_law,
   else the plant's own p, as its model). X: n_runs x n_samples x nx, TAU: n_runs x
   n_samples x nj; samples after a run's fault stay as the caller filled them. status[r],
   n_out[r], t_fault[r]: per run. */
void fm_rk4_batch(const fm_plant *pl, const fm_control *c, int prescribed, const double *t, long n_t,
                  long n_runs, const double *X0, const double *P, long n_p, int nx, long every, long n_samples,
                  double *X, double *TAU, int *status, long *n_out, double *t_fault)
{
    for (long r = 0; r < n_runs; ++r) {
        fm_plant one = *pl;
        if (P) {
            if (!one.p_law) one.p_law = pl->p;
            one.p = P + r * n_p;
        }
        status[r] = fm_rk4_run(&one, c, prescribed, t, n_t, X0 + r * nx, nx, every, X + r * n_samples * nx,
                               TAU + r * n_samples * pl->nj, &n_out[r], &t_fault[r]);
    }
}
"""


# ----- the same structs on the Python side --------------------------------------------------
_P = ctypes.POINTER(ctypes.c_double)


class Plant(ctypes.Structure):
    _fields_ = [("nq", ctypes.c_int), ("nj", ctypes.c_int), ("mass_matrix", ctypes.c_void_p),
                ("bias_forces", ctypes.c_void_p), ("has_p", ctypes.c_int),
                ("p", _P), ("p_law", _P), ("fd_partials", ctypes.c_void_p), ("id_partials", ctypes.c_void_p),
                ("has_p_partials", ctypes.c_int), ("act", ctypes.POINTER(ctypes.c_int)), ("tau_limit", _P)]


class Traj(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("profile", ctypes.c_int), ("n", ctypes.c_int), ("pieces", ctypes.c_int),
                ("t_start", ctypes.c_double), ("t_end", ctypes.c_double), ("a", _P), ("n_shift", ctypes.c_int),
                ("shift_t", _P), ("shift_a", _P)]


class Control(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("traj", Traj), ("kp", _P), ("ki", _P), ("kd", _P), ("gp", _P), ("gv", _P),
                ("g_lqr", _P), ("off_at", ctypes.c_double), ("lqr_at", ctypes.c_double), ("tau_max", _P),
                ("tau_const", _P), ("tau_samples", _P), ("t_samples", _P), ("n_samples", ctypes.c_long)]


class ReducedPlant(ctypes.Structure):
    """``fm_reduced`` (:mod:`flexman.codegen.loop_reduced`): a reduced model's plant."""
    _fields_ = [("full", Plant), ("na", ctypes.c_int), ("nd", ctypes.c_int), ("slaved", ctypes.c_int),
                ("max_iterations", ctypes.c_int), ("active", ctypes.POINTER(ctypes.c_int)),
                ("dropped", ctypes.POINTER(ctypes.c_int)), ("newton", _P), ("tol", ctypes.c_double),
                ("floor", ctypes.c_double), ("last", _P), ("scratch", _P), ("solves", ctypes.c_long),
                ("iterations", ctypes.c_long)]


STATUS = {0: "ok", 1: "singular", 2: "torque", 3: "diverged", 4: "no memory"}
TRAJ_KINDS = {"hold": 0, "rest_to_rest": 1, "spline": 2, "spin_up": 3, "input": 4, "fourier": 5}
PROFILES = {"sinusoidal": 0, "quintic": 1, "cubic": 2}
CONTROLLER_KINDS = {None: 0, "pid": 1, "computed_torque": 2, "decoupling": 3}

_library = []


def library():
    """The loop library (compiled once per source and compiler, cached on disk like every
    generated library; ``cbuild.build_shared``), loaded with its entry points typed."""
    if not _library:
        # the sampled loop (fm_sampled_run), radau5 and the reduced models' loop share this library
        from . import loop_radau, loop_reduced, loop_sampled

        lib = cbuild.load(cbuild.build_shared(SOURCE + loop_radau.SOURCE + loop_reduced.SOURCE + loop_sampled.SOURCE))
        loop_sampled.type_entry_points(lib)
        loop_radau.declare(lib)
        loop_reduced.declare(lib)
        vp, P, L, I = ctypes.c_void_p, _P, ctypes.c_long, ctypes.c_int
        lib.fm_rk4_run.restype = I
        lib.fm_rk4_run.argtypes = [vp, vp, I, P, L, P, I, L, P, P, ctypes.POINTER(L), P]
        lib.fm_galpha_run.restype = I
        lib.fm_galpha_run.argtypes = [vp, vp, I, P, L, P, I, L, ctypes.c_double, P, P, ctypes.POINTER(L), P,
                                      ctypes.POINTER(L), ctypes.POINTER(L), ctypes.POINTER(L)]
        lib.fm_loop_jacobian.restype = I
        lib.fm_loop_jacobian.argtypes = [vp, vp, I, ctypes.c_double, P, I, I, P]
        lib.fm_rk4_batch.restype = None
        lib.fm_rk4_batch.argtypes = [vp, vp, I, P, L, L, P, P, L, I, L, L, P, P, ctypes.POINTER(I),
                                     ctypes.POINTER(L), P]
        for name in ("fm_closed_loop_rhs", "fm_prescribed_rhs"):
            f = getattr(lib, name)
            f.restype = I
            f.argtypes = [vp, vp, ctypes.c_double, P, P, P, P]
        lib.fm_work_size.restype = L
        lib.fm_work_size.argtypes = [I, I]
        _library.append(lib)
    return _library[0]
