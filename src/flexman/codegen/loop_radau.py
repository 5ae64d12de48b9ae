"""The compiled loop's stiffly accurate method: 3-stage Radau IIA (order 5) with step-size
control, and the implicit methods over a batch.

:data:`SOURCE` is C that :func:`flexman.codegen.loop.library` compiles after the loop's own
source (it calls that source's right-hand sides, LU, Jacobians and sampling helpers):

* ``fm_radau_run(...)``: one run of x' = f(t, x) (``fm_closed_loop_rhs`` or ``fm_prescribed_rhs``)
  over the output grid, as ``fm_rk4_run`` (status codes, the samples before a fault) but with
  steps of its own choosing between the samples. The algorithm is Hairer & Wanner's RADAU5
  (Solving ODEs II, sec. IV.8), step for step as SciPy's ``Radau`` implements it: the stage
  equations are solved by simplified Newton in the eigenvector basis of the Butcher matrix (one
  real and one complex n x n LU of ``mu/h I - J`` per step size), J = df/dx from the model's
  partial derivatives (``fm_jacobian_any``: forward differences only where the model has no
  partials) and reused across steps until Newton slows down; the error of
  the embedded third-order formula sets the next step (predictive Gustafsson controller);
  outputs come from the collocation polynomial (cubic dense output), so they land on the grid
  without clipping the steps. The run is ``fm_radau_start`` (rates, Jacobian and first step at
  the start) and ``fm_radau_step`` (one accepted step, ending at a given time at the latest)
  over the state in ``fm_radau``: an FMU's co-simulation steps with the same two
  (:mod:`flexman.codegen.fmi2`), its steps ending at the communication points;
* ``fm_implicit_batch(...)``: many runs of generalized-alpha or Radau IIA, each with its own
  initial state and parameter vector, as ``fm_rk4_batch``.
"""
from __future__ import annotations

import ctypes

#: the method codes of fm_implicit_batch
BATCH_METHODS = {"generalized_alpha": 1, "radau5": 2}
#: the entries of fm_radau_run's counts array, in order
COUNTS = ("steps", "rejected_steps", "newton_iterations", "jacobians", "analytic_jacobians", "lu_decompositions",
          "rhs_evaluations")

SOURCE = r"""
#include <complex.h>
#undef I

/* ----- Radau IIA of order 5 (Hairer & Wanner II, sec. IV.8; the constants as SciPy's radau.py) ----- */
#define FM_S6 2.449489742783178098197284
static const double FM_RC[3] = {(4.0 - FM_S6) / 10.0, (4.0 + FM_S6) / 10.0, 1.0};
static const double FM_RE[3] = {(-13.0 - 7.0 * FM_S6) / 3.0, (-13.0 + 7.0 * FM_S6) / 3.0, -1.0 / 3.0};
/* A = T diag(mu_real, mu_complex, conj) T^-1 (inverse eigenvalues) */
static const double FM_RT[9] = {0.09443876248897524, -0.14125529502095421, 0.03002919410514742,
                                0.25021312296533332, 0.20412935229379994, -0.38294211275726192,
                                1.0, 1.0, 0.0};
static const double FM_RTI[9] = {4.17871859155190428, 0.32768282076106237, 0.52337644549944951,
                                 -4.17871859155190428, -0.32768282076106237, 0.47662355450055044,
                                 0.50287263494578682, -2.57192694985560522, 0.59603920482822492};
/* the collocation polynomial: x(t_old + s h) = x_old + sum_k Q_k s^(k+1), Q = Z^T P */
static const double FM_RP[9] = {13.0 / 3.0 + 7.0 * FM_S6 / 3.0, -23.0 / 3.0 - 22.0 * FM_S6 / 3.0, 10.0 / 3.0 + 5.0 * FM_S6,
                                13.0 / 3.0 - 7.0 * FM_S6 / 3.0, -23.0 / 3.0 + 22.0 * FM_S6 / 3.0, 10.0 / 3.0 - 5.0 * FM_S6,
                                1.0 / 3.0, -8.0 / 3.0, 10.0 / 3.0};
#define FM_NEWTON_MAXITER 6

/* LU with partial pivoting of the complex n x n A (row-major, in place); 1 when a pivot vanishes. */
static int fm_zlu(int n, double complex *A, int *piv)
{
    for (int k = 0; k < n; ++k) {
        int p = k;
        double best = cabs(A[k * n + k]);
        for (int i = k + 1; i < n; ++i)
            if (cabs(A[i * n + k]) > best) { best = cabs(A[i * n + k]); p = i; }
        piv[k] = p;
        if (!(best > 0.0)) return 1;
        if (p != k)
            for (int j = 0; j < n; ++j) { double complex tmp = A[k * n + j]; A[k * n + j] = A[p * n + j]; A[p * n + j] = tmp; }
        for (int i = k + 1; i < n; ++i) {
            double complex m = A[i * n + k] /= A[k * n + k];
            for (int j = k + 1; j < n; ++j) A[i * n + j] -= m * A[k * n + j];
        }
    }
    return 0;
}

static void fm_zlu_solve(int n, const double complex *A, const int *piv, double complex *b)
{
    for (int k = 0; k < n; ++k)
        if (piv[k] != k) { double complex tmp = b[k]; b[k] = b[piv[k]]; b[piv[k]] = tmp; }
    for (int k = 0; k < n; ++k)
        for (int i = k + 1; i < n; ++i) b[i] -= A[i * n + k] * b[k];
    for (int k = n - 1; k >= 0; --k) {
        for (int j = k + 1; j < n; ++j) b[k] -= A[k * n + j] * b[j];
        b[k] /= A[k * n + k];
    }
}

/* The root mean square of v / scale over m values (n values of scale, repeated). */
static double fm_rms(int m, int n, const double *v, const double *scale)
{
    double s = 0.0;
    for (int i = 0; i < m; ++i) { double r = v[i] / scale[i % n]; s += r * r; }
    return sqrt(s / m);
}

typedef struct {  /* one Radau integration's scratch and state (kept between calls: an FMU's steps) */
    fm_rhs f;
    fm_jac jac;
    const fm_plant *pl;
    const fm_control *c;
    int prescribed, nx;
    double *work, *ps, *J, *LUr, *Z, *W, *dW, *F, *ys, *xp, *fp, *tau, *tau_fd;
    double *y, *ynew, *fy, *fnew, *scale, *err, *Q, *yold, *ds, *tmp, *tau_y;
    double complex *LUc, *cv;
    int *pr, *pc;
    long *counts;  /* steps, rejected, Newton iterations, Jacobians, analytic ones, LUs, right-hand sides */
    double tc, t_old, t_fault, rtol, atol, max_step, tol, h_abs, h_old, err_old, h_prev;
    int have_lu, current_jac, have_poly;
    double *mem;
    double complex *cmem;
    int *ipiv;
} fm_radau;

/* The scratch of a Radau integration of x' = f(t, x) (nx states) with the plant and law; counts: 7
   longs the integration adds its work to. FM_NOMEMORY when it cannot be allocated. */
static int fm_radau_alloc(fm_radau *r, fm_rhs f, fm_jac jac, const fm_plant *pl, const fm_control *c, int prescribed,
                          int nx, long *counts)
{
    int n = nx, nj = pl->nj;
    long ws = fm_work_size(pl->nq, nj), pw = fm_partials_work(pl->nq, nj);
    memset(r, 0, sizeof(*r));
    r->f = f; r->jac = jac; r->pl = pl; r->c = c; r->prescribed = prescribed; r->nx = n; r->counts = counts;
    r->mem = (double *)malloc(sizeof(double) * (ws + pw + 2L * n * n + 30L * n + 3L * nj + 8));
    r->cmem = (double complex *)malloc(sizeof(double complex) * ((long)n * n + n + 1));
    r->ipiv = (int *)malloc(sizeof(int) * (2L * n + 2));
    if (!r->mem || !r->cmem || !r->ipiv) {
        free(r->mem); free(r->cmem); free(r->ipiv);
        r->mem = NULL; r->cmem = NULL; r->ipiv = NULL;
        return FM_NOMEMORY;
    }
    double *mem = r->mem;
    r->work = mem; r->ps = mem + ws; r->J = r->ps + pw; r->LUr = r->J + (long)n * n; r->Z = r->LUr + (long)n * n;
    r->W = r->Z + 3 * n; r->dW = r->W + 3 * n; r->F = r->dW + 3 * n; r->ys = r->F + 3 * n; r->xp = r->ys + n;
    r->fp = r->xp + n;
    r->y = r->fp + n; r->ynew = r->y + n; r->fy = r->ynew + n; r->fnew = r->fy + n; r->scale = r->fnew + n;
    r->err = r->scale + n; r->Q = r->err + n; r->yold = r->Q + 3 * n; r->ds = r->yold + n; r->tmp = r->ds + n;
    r->tau = r->tmp + n; r->tau_fd = r->tau + nj; r->tau_y = r->tau_fd + nj;
    r->LUc = r->cmem; r->cv = r->cmem + (long)n * n; r->pr = r->ipiv; r->pc = r->ipiv + n;
    return FM_OK;
}

static void fm_radau_release(fm_radau *r)
{
    free(r->mem); free(r->cmem); free(r->ipiv);
    r->mem = NULL; r->cmem = NULL; r->ipiv = NULL;
}

static int fm_radau_jacobian(fm_radau *r, double t, const double *x, const double *fx, const double *tau)
{
    long analytic = 0;
    int status = fm_jacobian_any(r->f, r->jac, r->pl, r->c, r->prescribed, t, x, fx, tau, r->nx, r->J, r->xp, r->fp,
                                 r->tau_fd, r->work, r->ps, &analytic);
    ++r->counts[3];
    r->counts[4] += analytic;
    if (!analytic) r->counts[6] += r->nx;
    return status;
}

/* The iteration matrices mu_real/h I - J and mu_complex/h I - J, factored; 1 when singular. */
static int fm_radau_factor(fm_radau *r, double h)
{
    int n = r->nx;
    const double mr = 3.0 + cbrt(9.0) - cbrt(3.0);
    const double complex mc = (3.0 + 0.5 * (cbrt(3.0) - cbrt(9.0))) - 0.5 * (pow(3.0, 5.0 / 6.0) + pow(3.0, 7.0 / 6.0)) * _Complex_I;
    for (long i = 0; i < (long)n * n; ++i) { r->LUr[i] = -r->J[i]; r->LUc[i] = -r->J[i]; }
    for (int i = 0; i < n; ++i) { r->LUr[i * n + i] += mr / h; r->LUc[i * n + i] += mc / h; }
    ++r->counts[5];
    return fm_lu(n, r->LUr, r->pr) || fm_zlu(n, r->LUc, r->pc);
}

/* Simplified Newton on the collocation system from the guess Z (3 x nx, in place): *converged,
   *n_iter and *rate as SciPy's solve_collocation_system; returns a right-hand side's fault. */
static int fm_radau_newton(fm_radau *r, double t, const double *y, double h, const double *scale, double tol,
                           int *converged, int *n_iter, double *rate)
{
    int n = r->nx, k;
    const double mr = 3.0 + cbrt(9.0) - cbrt(3.0);
    const double complex mc = (3.0 + 0.5 * (cbrt(3.0) - cbrt(9.0))) - 0.5 * (pow(3.0, 5.0 / 6.0) + pow(3.0, 7.0 / 6.0)) * _Complex_I;
    double *Z = r->Z, *W = r->W, *dW = r->dW, *F = r->F, old = -1.0;
    for (int s = 0; s < 3; ++s)
        for (int i = 0; i < n; ++i)
            W[s * n + i] = FM_RTI[s * 3] * Z[i] + FM_RTI[s * 3 + 1] * Z[n + i] + FM_RTI[s * 3 + 2] * Z[2 * n + i];
    *converged = 0;
    *rate = NAN;
    for (k = 0; k < FM_NEWTON_MAXITER; ++k) {
        int bad = 0;
        for (int s = 0; s < 3 && !bad; ++s) {
            for (int i = 0; i < n; ++i) r->ys[i] = y[i] + Z[s * n + i];
            if (!fm_finite(n, r->ys)) { bad = 1; break; }
            int status = r->f(r->pl, r->c, t + FM_RC[s] * h, r->ys, F + s * n, r->tau, r->work);
            ++r->counts[6];
            if (status) { *n_iter = k + 1; return status; }
            if (!fm_finite(n, F + s * n)) bad = 1;
        }
        if (bad) break;
        for (int i = 0; i < n; ++i) {
            double fr = FM_RTI[0] * F[i] + FM_RTI[1] * F[n + i] + FM_RTI[2] * F[2 * n + i];
            double complex fc = (FM_RTI[3] + FM_RTI[6] * _Complex_I) * F[i] + (FM_RTI[4] + FM_RTI[7] * _Complex_I) * F[n + i]
                                + (FM_RTI[5] + FM_RTI[8] * _Complex_I) * F[2 * n + i];
            dW[i] = fr - mr / h * W[i];
            r->cv[i] = fc - mc / h * (W[n + i] + W[2 * n + i] * _Complex_I);
        }
        fm_lu_solve(n, r->LUr, r->pr, dW);
        fm_zlu_solve(n, r->LUc, r->pc, r->cv);
        for (int i = 0; i < n; ++i) { dW[n + i] = creal(r->cv[i]); dW[2 * n + i] = cimag(r->cv[i]); }
        double size = fm_rms(3 * n, n, dW, scale);
        if (!(size == size) || size == INFINITY) break;
        if (old >= 0.0) *rate = size / old;
        if (old >= 0.0 && (*rate >= 1.0 || pow(*rate, FM_NEWTON_MAXITER - k) / (1.0 - *rate) * size > tol)) break;
        for (int i = 0; i < 3 * n; ++i) W[i] += dW[i];
        for (int s = 0; s < 3; ++s)
            for (int i = 0; i < n; ++i)
                Z[s * n + i] = FM_RT[s * 3] * W[i] + FM_RT[s * 3 + 1] * W[n + i] + FM_RT[s * 3 + 2] * W[2 * n + i];
        if (size == 0.0 || (old >= 0.0 && *rate / (1.0 - *rate) * size < tol)) { *converged = 1; break; }
        old = size;
    }
    *n_iter = (k < FM_NEWTON_MAXITER ? k : FM_NEWTON_MAXITER - 1) + 1;
    return FM_OK;
}

/* The step-size factor of the predictive controller (Hairer & Wanner II, IV.8, eq. 8.25); h_old < 0: none. */
static double fm_radau_factor_of(double h, double h_old, double err, double err_old)
{
    double mult = 1.0;
    if (h_old > 0.0 && err_old >= 0.0 && err != 0.0) mult = h / h_old * pow(err_old / err, 0.25);
    return (mult < 1.0 ? mult : 1.0) * pow(err, -0.25);
}

/* Start (or start again) an integration at (t0, x0) for rtol, atol (the error's root mean square
   relative to atol + rtol |x| at most 1) and max_step, the first step at most to tend: the rates
   there, the Jacobian and the first step size. tau0 (NULL: not wanted): the torque at the start,
   written once the rates there are known. Returns FM_OK or the fault met. */
static int fm_radau_start(fm_radau *r, double t0, const double *x0, double tend, double rtol, double atol,
                          double max_step, double *tau0)
{
    int n = r->nx, status;
    const double eps = 2.220446049250313e-16;
    double *y = r->y, *fy = r->fy, *scale = r->scale, *ds = r->ds, *tmp = r->tmp;
    r->rtol = rtol; r->atol = atol; r->max_step = max_step;
    r->tol = fmax(10.0 * eps / rtol, fmin(0.03, sqrt(rtol)));
    r->have_lu = 0; r->current_jac = 1; r->have_poly = 0;
    r->h_old = -1.0; r->err_old = -1.0; r->h_prev = 0.0;
    r->tc = t0;
    r->t_fault = t0;
    memcpy(y, x0, sizeof(double) * n);
    if ((status = r->f(r->pl, r->c, t0, y, fy, r->tau_y, r->work))) return status;
    ++r->counts[6];
    if (tau0) memcpy(tau0, r->tau_y, sizeof(double) * r->pl->nj);
    if (!fm_finite(n, fy)) return FM_DIVERGED;
    if ((status = fm_radau_jacobian(r, t0, y, fy, r->tau_y))) return status;
    /* the first step (Hairer, Norsett & Wanner I, II.4; SciPy's select_initial_step, order 3) */
    for (int i = 0; i < n; ++i) scale[i] = atol + fabs(y[i]) * rtol;
    double d0 = fm_rms(n, n, y, scale), d1 = fm_rms(n, n, fy, scale), h0, h1;
    h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    h0 = fmin(h0, tend - t0);
    for (int i = 0; i < n; ++i) r->ys[i] = y[i] + h0 * fy[i];
    if ((status = r->f(r->pl, r->c, t0 + h0, r->ys, ds, r->tau, r->work))) return status;
    ++r->counts[6];
    for (int i = 0; i < n; ++i) tmp[i] = ds[i] - fy[i];
    double d2 = fm_rms(n, n, tmp, scale) / h0;
    h1 = (d1 <= 1e-15 && d2 <= 1e-15) ? fmax(1e-6, h0 * 1e-3) : pow(0.01 / fmax(d1, d2), 0.25);
    r->h_abs = fmin(fmin(100.0 * h0, h1), fmin(tend - t0, max_step));
    if (!(r->h_abs == r->h_abs)) r->h_abs = h0;  /* non-finite rates at the start run into the first step */
    return FM_OK;
}

/* Where a run's samples go: every `every`-th time of the grid t[0..n_t-1] and the last; next: the
   grid index of the next sample, j: the samples written (rows of X, nx, and TAU, nj). */
typedef struct {
    const double *t;
    long n_t, every, next, j;
    double *X, *TAU;
} fm_radau_grid;

/* One accepted step from r->tc, ending at tend at the latest (y, fy advanced; the samples of g in the
   step, from its collocation polynomial, when g is not NULL). Returns FM_OK or the fault met
   (r->t_fault: the start of the step that met it). */
static int fm_radau_step(fm_radau *r, double tend, fm_radau_grid *g)
{
    int n = r->nx, nj = r->pl->nj, status = FM_OK;
    const fm_plant *pl = r->pl;
    const fm_control *c = r->c;
    double *y = r->y, *ynew = r->ynew, *fy = r->fy, *fnew = r->fnew, *scale = r->scale, *err = r->err;
    double *Q = r->Q, *yold = r->yold, *ds = r->ds, *tmp = r->tmp, *tau_y = r->tau_y;
    const double tc = r->tc, rtol = r->rtol, atol = r->atol, tol = r->tol;
    double min_step = 10.0 * (nextafter(tc, INFINITY) - tc), h_start = r->h_abs, h, tn, err_norm = 0.0, rate = NAN;
    double safety = 0.9;
    int rejected = 0, accepted = 0, n_iter = 0, converged = 0;
    if (r->h_abs > r->max_step) { r->h_abs = r->max_step; r->h_old = -1.0; r->err_old = -1.0; }
    else if (r->h_abs < min_step) { r->h_abs = min_step; r->h_old = -1.0; r->err_old = -1.0; }
    const double h_proposed = r->h_abs;  /* the step the controller asked for, before clipping at tend */
    r->t_fault = tc;
    while (!accepted) {
        if (r->h_abs < min_step) return FM_DIVERGED;
        tn = tc + r->h_abs;
        if (tn > tend) tn = tend;
        h = tn - tc;
        r->h_abs = h;
        for (int s = 0; s < 3; ++s)  /* the guess: the last step's polynomial, extrapolated */
            for (int i = 0; i < n; ++i) {
                double v = 0.0;
                if (r->have_poly) {
                    double x = (tc + FM_RC[s] * h - (tc - r->h_prev)) / r->h_prev, p = x;
                    for (int k = 0; k < 3; ++k, p *= x) v += Q[i * 3 + k] * p;
                    v += yold[i] - y[i];
                }
                r->Z[s * n + i] = v;
            }
        for (int i = 0; i < n; ++i) scale[i] = atol + fabs(y[i]) * rtol;
        converged = 0;
        while (!converged) {
            if (!r->have_lu) {
                if (fm_radau_factor(r, h)) return FM_SINGULAR;
                r->have_lu = 1;
            }
            double guess[3 * n];
            memcpy(guess, r->Z, sizeof(double) * 3 * n);
            if ((status = fm_radau_newton(r, tc, y, h, scale, tol, &converged, &n_iter, &rate))) return status;
            r->counts[2] += n_iter;
            if (converged) break;
            memcpy(r->Z, guess, sizeof(double) * 3 * n);
            if (r->current_jac) break;
            if ((status = fm_radau_jacobian(r, tc, y, fy, tau_y))) return status;
            r->current_jac = 1;
            r->have_lu = 0;
        }
        if (!converged) { r->h_abs *= 0.5; r->have_lu = 0; ++r->counts[1]; continue; }
        for (int i = 0; i < n; ++i) {
            ynew[i] = y[i] + r->Z[2 * n + i];
            ds[i] = (FM_RE[0] * r->Z[i] + FM_RE[1] * r->Z[n + i] + FM_RE[2] * r->Z[2 * n + i]) / h;
            err[i] = fy[i] + ds[i];
            scale[i] = atol + fmax(fabs(y[i]), fabs(ynew[i])) * rtol;
        }
        fm_lu_solve(n, r->LUr, r->pr, err);
        err_norm = fm_rms(n, n, err, scale);
        if (rejected && err_norm > 1.0) {  /* the filtered estimate after a rejection */
            for (int i = 0; i < n; ++i) r->ys[i] = y[i] + err[i];
            if ((status = r->f(pl, c, tc, r->ys, tmp, r->tau, r->work))) return status;
            ++r->counts[6];
            for (int i = 0; i < n; ++i) err[i] = tmp[i] + ds[i];
            fm_lu_solve(n, r->LUr, r->pr, err);
            err_norm = fm_rms(n, n, err, scale);
        }
        safety = 0.9 * (2 * FM_NEWTON_MAXITER + 1) / (2 * FM_NEWTON_MAXITER + n_iter);
        if (!(err_norm <= 1.0)) {
            double factor = err_norm == err_norm ? fm_radau_factor_of(r->h_abs, r->h_old, err_norm, r->err_old) : 0.0;
            r->h_abs *= fmax(0.2, safety * factor);
            r->have_lu = 0;
            rejected = 1;
            ++r->counts[1];
        } else
            accepted = 1;
    }
    int recompute = n_iter > 2 && rate > 1e-3;
    double factor = fmin(10.0, safety * fm_radau_factor_of(r->h_abs, r->h_old, err_norm, r->err_old));
    if (!recompute && factor < 1.2) factor = 1.0;
    else r->have_lu = 0;
    if ((status = r->f(pl, c, tn, ynew, fnew, tau_y, r->work))) return status;
    ++r->counts[6];
    if (!fm_finite(n, ynew) || !fm_finite(n, fnew)) return FM_DIVERGED;
    /* the step's collocation polynomial; the samples in (tc, tn] from it */
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k)
            Q[i * 3 + k] = r->Z[i] * FM_RP[k] + r->Z[n + i] * FM_RP[3 + k] + r->Z[2 * n + i] * FM_RP[6 + k];
    while (g && g->next < g->n_t && g->t[g->next] <= tn) {
        double *xs = g->X + g->j * n, *ts = g->TAU + g->j * nj;
        if (g->t[g->next] == tn) {
            memcpy(xs, ynew, sizeof(double) * n);
            memcpy(ts, tau_y, sizeof(double) * nj);
        } else {
            double x = (g->t[g->next] - tc) / h, p = x;
            for (int i = 0; i < n; ++i) xs[i] = y[i];
            for (int k = 0; k < 3; ++k, p *= x)
                for (int i = 0; i < n; ++i) xs[i] += Q[i * 3 + k] * p;
            if ((status = r->f(pl, c, g->t[g->next], xs, tmp, ts, r->work)) || !fm_finite(n, xs))
                return status ? status : FM_DIVERGED;
            ++r->counts[6];
        }
        ++g->j;
        g->next = g->next + g->every < g->n_t - 1 ? g->next + g->every : (g->next == g->n_t - 1 ? g->n_t : g->n_t - 1);
    }
    if (recompute) {
        if ((status = fm_radau_jacobian(r, tn, ynew, fnew, tau_y))) { r->t_fault = tn; return status; }
        r->current_jac = 1;
    } else
        r->current_jac = 0;
    r->h_old = h_start;
    r->err_old = err_norm;
    r->h_prev = h;
    r->h_abs = r->h_abs * factor;
    if (!rejected && tn == tend && r->h_abs < h_proposed)
        r->h_abs = h_proposed;  /* cut short by tend (an FMU's communication point): the next step as asked */
    memcpy(yold, y, sizeof(double) * n);
    memcpy(y, ynew, sizeof(double) * n);
    memcpy(fy, fnew, sizeof(double) * n);
    r->have_poly = 1;
    r->t_old = tc;
    r->tc = tn;
    r->t_fault = tn;
    ++r->counts[0];
    return FM_OK;
}

/* One Radau IIA run over the grid t[0..n_t-1] from x0: the samples are every `every`-th grid time
   and the last (X rows of nx, TAU rows of nj: the torque at the sample's state), taken from the
   steps' collocation polynomials; the steps are chosen for rtol, atol (the error's root mean
   square relative to atol + rtol |x| at most 1) and max_step. Returns FM_OK or the fault that
   ended the run (FM_DIVERGED also when the step size falls below round-off, Newton failing at
   every size); *n_out: the samples written, *t_fault: the start of the step that met the fault.
   counts[7]: steps, rejected steps, Newton iterations, Jacobians, analytic ones, LU pairs,
   right-hand sides. */
static int fm_radau_with(fm_rhs f, fm_jac jac, const fm_plant *pl, const fm_control *c, int prescribed,
                         const double *t, long n_t, const double *x0, int nx, long every, double rtol, double atol,
                         double max_step, double *X, double *TAU, long *n_out, double *t_fault, long *counts);

int fm_radau_run(const fm_plant *pl, const fm_control *c, int prescribed, const double *t, long n_t,
                 const double *x0, int nx, long every, double rtol, double atol, double max_step, double *X,
                 double *TAU, long *n_out, double *t_fault, long *counts)
{
    return fm_radau_with(prescribed ? fm_prescribed_rhs : fm_closed_loop_rhs, fm_jacobian_analytic, pl, c, prescribed,
                         t, n_t, x0, nx, every, rtol, atol, max_step, X, TAU, n_out, t_fault, counts);
}

/* fm_radau_run with the right-hand side f and its analytic Jacobian jac (a reduced model's). */
static int fm_radau_with(fm_rhs f, fm_jac jac, const fm_plant *pl, const fm_control *c, int prescribed,
                         const double *t, long n_t, const double *x0, int nx, long every, double rtol, double atol,
                         double max_step, double *X, double *TAU, long *n_out, double *t_fault, long *counts)
{
    fm_radau r;
    for (int i = 0; i < 7; ++i) counts[i] = 0;
    if (fm_radau_alloc(&r, f, jac, pl, c, prescribed, nx, counts)) {
        *n_out = 0;
        return FM_NOMEMORY;
    }
    fm_radau_grid g = {t, n_t, every, every < n_t - 1 ? every : n_t - 1, 1, X, TAU};
    const double tend = t[n_t - 1];
    memcpy(X, x0, sizeof(double) * nx);
    for (int i = 0; i < pl->nj; ++i) TAU[i] = NAN;
    int status = fm_radau_start(&r, t[0], x0, tend, rtol, atol, max_step, TAU);
    while (!status && r.tc < tend && n_t > 1) status = fm_radau_step(&r, tend, &g);
    *t_fault = r.t_fault;
    *n_out = g.j;
    fm_radau_release(&r);
    return status;
}

/* n_runs runs of one plant and controller on one grid with an implicit method (1: generalized-alpha
   with rho_inf, 2: Radau IIA with rtol, atol, max_step), arguments and results as fm_rk4_batch's;
   counts: n_runs x 7 (fm_radau_run's; generalized-alpha fills steps, Newton iterations, Jacobians
   and analytic ones). */
void fm_implicit_batch(const fm_plant *pl, const fm_control *c, int prescribed, const double *t, long n_t,
                       long n_runs, const double *X0, const double *P, long n_p, int nx, long every, long n_samples,
                       int method, double rho_inf, double rtol, double atol, double max_step, double *X, double *TAU,
                       int *status, long *n_out, double *t_fault, long *counts)
{
    for (long r = 0; r < n_runs; ++r) {
        fm_plant one = *pl;
        long *cr = counts + 7 * r;
        if (P) {
            if (!one.p_law) one.p_law = pl->p;
            one.p = P + r * n_p;
        }
        double *Xr = X + r * n_samples * nx, *Tr = TAU + r * n_samples * pl->nj;
        if (method == 2) {
            status[r] = fm_radau_run(&one, c, prescribed, t, n_t, X0 + r * nx, nx, every, rtol, atol, max_step, Xr,
                                     Tr, &n_out[r], &t_fault[r], cr);
        } else {
            for (int i = 0; i < 7; ++i) cr[i] = 0;
            status[r] = fm_galpha_run(&one, c, prescribed, t, n_t, X0 + r * nx, nx, every, rho_inf, Xr, Tr, &n_out[r],
                                      &t_fault[r], &cr[2], &cr[3], &cr[4]);
            cr[0] = status[r] ? 0 : n_t - 1;
        }
    }
}
"""


def declare(lib) -> None:
    """Type this source's entry points on the loaded loop library ``lib``."""
    vp, P, L, I, D = ctypes.c_void_p, ctypes.POINTER(ctypes.c_double), ctypes.c_long, ctypes.c_int, ctypes.c_double
    PL = ctypes.POINTER(L)
    lib.fm_radau_run.restype = I
    lib.fm_radau_run.argtypes = [vp, vp, I, P, L, P, I, L, D, D, D, P, P, PL, P, PL]
    lib.fm_implicit_batch.restype = None
    lib.fm_implicit_batch.argtypes = [vp, vp, I, P, L, L, P, P, L, I, L, L, I, D, D, D, D, P, P, ctypes.POINTER(I),
                                      PL, P, PL]
