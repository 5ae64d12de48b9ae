"""A reduced model's closed loop in C (``fm.reduce``): the dropped coordinates solved at every
right-hand side, a whole RK4, generalized-alpha or Radau IIA run in one call
(``fm_reduced_rk4_run``, ``fm_reduced_galpha_run``, ``fm_reduced_radau_run``: the loop's runs with
this right-hand side), many runs in one call (``fm_reduced_batch``). The implicit methods' Newton
Jacobian ``fm_reduced_jacobian`` comes from the full model's partial derivatives (forward
differences of the right-hand side where the model has none).

:data:`SOURCE` is compiled after :data:`flexman.codegen.loop.SOURCE` into the same library and
uses its plant (the full robot's compiled model), controller laws, LDL^T solve and RK4 run. The
right-hand side ``fm_reduced_rhs`` does what :meth:`flexman.analysis.reduction.Reduced.solve`
does under a controller, step for step: from the warm start (the last solution) it evaluates M
and b of the full model at the current dropped coordinates, the applied torque there (the law
reads the full coordinates, dropped rates zero), the active accelerations from the active rows
(LDL^T of M_aa), the dropped rows' residual and the update ``q_d <- q_d - J^-1 r``, until the
update is below ``tol |q_d| + floor`` (the same constants, passed from Python). The state is
``x = [q_a, qd_a, z]``; a truncated model (``static=False``) keeps q_d = 0 and stops after one
evaluation. ``FM_NOT_CONVERGED`` when the iteration does not converge (the Python model's error).
"""
from __future__ import annotations

import ctypes

SOURCE = r"""
/* ----- reduced models (flexman.analysis.reduction) ----- */
enum { FM_NOT_CONVERGED = 5 };

/* The full model's plant (first: a pointer to this struct is one to it, so fm_rk4_with runs it) with
   its coordinates split into na active and nd dropped ones (indices in the full q); newton: J^-1
   (nd x nd, row-major); slaved: 1 quasi-static, 0 truncated (q_d = 0); last: the warm start (nd,
   the last converged q_d, written at every solve); scratch: fm_reduced_work_size doubles. */
typedef struct {
    fm_plant full;
    int na, nd, slaved, max_iterations;
    const int *active, *dropped;
    const double *newton;
    double tol, floor;
    double *last, *scratch;
    long solves, iterations;  /* counts, for the run's stats */
} fm_reduced;

long fm_reduced_work_size(int nq, int nj)
{
    return 3L * nq * nq + 2L * nj * nj + (long)nq * (nj + 1) + 12L * nq + 14L * nj + 16;
}

/* x = [q_a, qd_a, z] -> dx = [qd_a, qdd_a, z'] and tau, the applied joint torques at the last
   iterate (as Reduced.solve returns them); work is unused (the struct's scratch serves). */
int fm_reduced_rhs(const fm_plant *pl, const fm_control *c, double t, const double *x, double *dx, double *tau,
                   double *work)
{
    fm_reduced *r = (fm_reduced *)pl;  /* the plant is its first member */
    int nq = pl->nq, nj = pl->nj, na = r->na, nd = r->nd;
    const double *qa = x, *qda = x + na, *z = x + 2 * na;
    double *M = r->scratch, *b = M + (long)nq * nq, *Maa = b + nq, *f = Maa + (long)na * na, *q = f + nq;
    double *qd = q + nq, *qdrop = qd + nq, *res = qdrop + nd, *step = res + nd, *applied = step + nd;
    double *w = applied + nj, *acc = dx + na;
    (void)work;
    for (int i = 0; i < nq; ++i) qd[i] = 0.0;
    for (int k = 0; k < na; ++k) { q[r->active[k]] = qa[k]; qd[r->active[k]] = qda[k]; }
    for (int m = 0; m < nd; ++m) qdrop[m] = r->slaved ? r->last[m] : 0.0;
    fm_applied(c, nj, t, applied);
    r->solves++;
    for (int it = 1; it <= r->max_iterations; ++it) {
        for (int m = 0; m < nd; ++m) q[r->dropped[m]] = qdrop[m];
        fm_eom(pl, pl->p, q, qd, M, b);
        int status = fm_control_law(pl, c, t, q, qd, z, M, b, tau, dx + 2 * na, w);  /* z' = e: joints only */
        if (status) return status;
        for (int j = 0; j < nj; ++j) tau[j] = applied[j] + tau[j];
        fm_saturate(nj, tau, pl->tau_limit);
        if (!fm_finite(nj, tau)) return FM_TORQUE;
        for (int i = 0; i < nq; ++i) f[i] = -b[i];  /* f = S tau - b */
        for (int j = 0; j < nj; ++j) f[pl->act ? pl->act[j] : j] += tau[j];
        for (int k = 0; k < na; ++k) {
            acc[k] = f[r->active[k]];
            for (int l = 0; l < na; ++l) Maa[k * na + l] = M[(long)r->active[k] * nq + r->active[l]];
        }
        if (fm_ldl(na, Maa)) return FM_SINGULAR;
        fm_ldl_apply(na, Maa, acc);
        r->iterations++;
        if (!r->slaved) break;
        for (int m = 0; m < nd; ++m) {  /* the dropped rows' residual M_da qdd_a - f_d */
            double s = 0.0;
            for (int l = 0; l < na; ++l) s += M[(long)r->dropped[m] * nq + r->active[l]] * acc[l];
            res[m] = s - f[r->dropped[m]];
        }
        double size = 0.0, norm = 0.0;
        for (int m = 0; m < nd; ++m) {
            double s = 0.0;
            for (int k = 0; k < nd; ++k) s += res[k] * r->newton[m * nd + k];
            step[m] = s;
        }
        for (int m = 0; m < nd; ++m) {
            qdrop[m] -= step[m];
            size += step[m] * step[m];
            norm += qdrop[m] * qdrop[m];
        }
        if (sqrt(size) <= r->tol * sqrt(norm) + r->floor) {
            memcpy(r->last, qdrop, sizeof(double) * nd);
            break;
        }
        if (!fm_finite(nd, qdrop) || it == r->max_iterations) return FM_NOT_CONVERGED;
    }
    memcpy(dx, qda, sizeof(double) * na);
    return FM_OK;
}

/* The reduced plant under the held joint torques tau (a sampled controller's, flexman.simulate.sampled):
   xs = [q_a, qd_a] -> dxs = [qd_a, qdd_a], the dropped coordinates solved (r->last); x (2 nq) and qdd
   (nq), when not NULL: the full state and accelerations there (dropped rates and accelerations 0).
   tau_out: nj scratch. */
static int fm_reduced_held(fm_reduced *r, double t, const double *xs, const double *tau, double *dxs, double *x,
                           double *qdd, double *tau_out)
{
    int nq = r->full.nq, na = r->na;
    fm_control held;
    memset(&held, 0, sizeof held);
    held.kind = FM_CTRL_NONE;
    held.tau_const = tau;
    held.off_at = held.lqr_at = INFINITY;
    int status = fm_reduced_rhs(&r->full, &held, t, xs, dxs, tau_out, NULL);
    if (status || !x) return status;
    for (int i = 0; i < 2 * nq; ++i) x[i] = 0.0;
    for (int i = 0; i < nq; ++i) qdd[i] = 0.0;
    for (int k = 0; k < na; ++k) {
        x[r->active[k]] = xs[k];
        x[nq + r->active[k]] = xs[na + k];
        qdd[r->active[k]] = dxs[na + k];
    }
    for (int m = 0; m < r->nd; ++m) x[r->dropped[m]] = r->slaved ? r->last[m] : 0.0;
    return FM_OK;
}

/* One RK4 step of h of the reduced plant under the held torques tau from xs (2 na, in place), as the
   Python loop's (flexman.simulate.sampled.run_sampled). s: 5 x 2 na + nj scratch. */
static int fm_reduced_held_rk4(fm_reduced *r, double t, double *xs, const double *tau, double h, double *s)
{
    int ns = 2 * r->na, status;
    double *k1 = s, *k2 = k1 + ns, *k3 = k2 + ns, *k4 = k3 + ns, *y = k4 + ns, *tau_out = y + ns;
    double *ks[4] = {k1, k2, k3, k4};
    for (int stage = 0; stage < 4; ++stage) {
        const double *at = xs;
        if (stage) {
            double c = stage == 3 ? h : 0.5 * h;
            for (int i = 0; i < ns; ++i) y[i] = xs[i] + c * ks[stage - 1][i];
            at = y;
        }
        if ((status = fm_reduced_held(r, t, at, tau, ks[stage], NULL, NULL, tau_out))) return status;
    }
    for (int i = 0; i < ns; ++i) xs[i] = xs[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    return FM_OK;
}

/* J = df/dx of fm_reduced_rhs at (t, x) from the full model's partial derivatives (its
   fm_inverse_dynamics_derivatives_batch) and the law's (fm_law_partials); -1 when the model has none.
   With q = (q_a, q_d), qd = (qd_a, 0) and a = (qdd_a, 0), the solution satisfies every row of
   G = ID(q, qd, a) - S tau(q, qd, z) = 0 (the active rows give qdd_a, the dropped rows q_d).
   Differentiating, with G_q = D_q - S T_q and G_qd = D_qd - S T_qd,
       [M(:, a)  G_q(:, d)] [dqdd_a; dq_d] = -G_q(:, a) dq_a - G_qd(:, a) dqd_a + S T_z dz
   (the implicit function theorem on the dropped rows together with the active ones), one LU of
   the nq x nq matrix on the left; the rows of qdd_a go into J. q_d, qdd_a and tau are those of x
   solved again here (from the warm start: one iteration when x was the last state solved), so
   the Jacobian holds at x whatever was evaluated last; f0 and tau are not used. s:
   fm_partials_work doubles. */
static int fm_reduced_jacobian(const fm_plant *pl, const fm_control *c, int prescribed, double t, const double *x,
                               const double *f0, const double *tau, int nx, double *J, double *s)
{
    fm_reduced *r = (fm_reduced *)pl;  /* the plant is its first member */
    int nq = pl->nq, nj = pl->nj, na = r->na, nd = r->nd, nz = nx - 2 * na, pid_on = 0, status;
    (void)prescribed; (void)f0; (void)tau;
    if (!pl->id_partials) return -1;
    double *Tq = s, *Tqd = Tq + (long)nj * nq, *Tz = Tqd + (long)nj * nq, *A = Tz + (long)nj * nj, *q = A + (long)nq * nq;
    double *qd = q + nq, *a = qd + nq, *col = a + nq, *dx = col + nq, *tx = dx + nx, *w = tx + nj;
    double *Dq = w, *Dqd = Dq + (long)nq * nq, *M = Dqd + (long)nq * nq, *b = M + (long)nq * nq;
    int piv[nq];
    if ((status = fm_reduced_rhs(pl, c, t, x, dx, tx, NULL))) return status;
    for (int i = 0; i < nq; ++i) q[i] = qd[i] = a[i] = 0.0;
    for (int k = 0; k < na; ++k) { q[r->active[k]] = x[k]; qd[r->active[k]] = x[na + k]; a[r->active[k]] = dx[na + k]; }
    for (int m = 0; m < nd; ++m) q[r->dropped[m]] = r->slaved ? r->last[m] : 0.0;
    if ((status = fm_law_partials(pl, c, t, q, qd, tx, Tq, Tqd, Tz, w, &pid_on))) return status;
    if (pl->has_p_partials) ((fm_idp_p)pl->id_partials)(1, q, qd, a, pl->p, Dq, Dqd);
    else ((fm_idp_nop)pl->id_partials)(1, q, qd, a, Dq, Dqd);
    fm_eom(pl, pl->p, q, qd, M, b);
    for (int j = 0; j < nj; ++j) {  /* G = D - S T, in place */
        long row = (long)(pl->act ? pl->act[j] : j) * nq;
        for (int k = 0; k < nq; ++k) { Dq[row + k] -= Tq[(long)j * nq + k]; Dqd[row + k] -= Tqd[(long)j * nq + k]; }
    }
    for (int i = 0; i < nq; ++i) {
        for (int k = 0; k < na; ++k) A[(long)i * nq + k] = M[(long)i * nq + r->active[k]];
        for (int m = 0; m < nd; ++m) A[(long)i * nq + na + m] = r->slaved ? Dq[(long)i * nq + r->dropped[m]] : 0.0;
    }
    if (!r->slaved)  /* truncated: q_d = 0 whatever the state, so its rows only pin dq_d = 0 */
        for (int m = 0; m < nd; ++m) A[(long)r->dropped[m] * nq + na + m] = 1.0;
    for (long i = 0; i < (long)nx * nx; ++i) J[i] = 0.0;
    for (int k = 0; k < na; ++k) J[(long)k * nx + na + k] = 1.0;
    if (fm_lu(nq, A, piv)) return FM_SINGULAR;
    for (int k = 0; k < na + na + nz && k < 2 * na + nj; ++k) {  /* column k of J: q_a, qd_a, then z */
        for (int i = 0; i < nq; ++i) {
            if (k < na) col[i] = -Dq[(long)i * nq + r->active[k]];
            else if (k < 2 * na) col[i] = -Dqd[(long)i * nq + r->active[k - na]];
            else col[i] = 0.0;
        }
        if (k >= 2 * na)
            for (int j = 0; j < nj; ++j) col[pl->act ? pl->act[j] : j] += Tz[(long)j * nj + k - 2 * na];
        if (!r->slaved)
            for (int m = 0; m < nd; ++m) col[r->dropped[m]] = 0.0;
        fm_lu_solve(nq, A, piv, col);
        for (int l = 0; l < na; ++l) J[(long)(na + l) * nx + k] = col[l];
    }
    if (pid_on)  /* z' = q_d - q_r: the joints come first among the active coordinates */
        for (int j = 0; j < nz && j < nj; ++j) J[(long)(2 * na + j) * nx + j] = -1.0;
    return FM_OK;
}

/* J = df/dx of the reduced model's right-hand side at (t, x) from the partial derivatives
   (fm_reduced_jacobian); -1 without them. For the tests. */
int fm_reduced_loop_jacobian(fm_reduced *r, const fm_control *c, double t, const double *x, int nx, double *J)
{
    double *s = (double *)malloc(sizeof(double) * fm_partials_work(r->full.nq, r->full.nj));
    if (!s) return FM_NOMEMORY;
    int status = fm_reduced_jacobian(&r->full, c, 0, t, x, NULL, NULL, nx, J, s);
    free(s);
    return status;
}

/* One generalized-alpha run of the reduced model r, the arguments and results as fm_galpha_run's (the
   Jacobian from the full model's partial derivatives when it has them, else by forward differences
   of fm_reduced_rhs). */
int fm_reduced_galpha_run(fm_reduced *r, const fm_control *c, const double *t, long n_t, const double *x0, int nx,
                          long every, double rho_inf, double *X, double *TAU, long *n_out, double *t_fault,
                          long *iterations, long *jacobians, long *analytic)
{
    return fm_galpha_with(fm_reduced_rhs, fm_reduced_jacobian, &r->full, c, 0, t, n_t, x0, nx, every, rho_inf, X, TAU,
                          n_out, t_fault, iterations, jacobians, analytic);
}

/* One Radau IIA run of the reduced model r, the arguments and results as fm_radau_run's. */
int fm_reduced_radau_run(fm_reduced *r, const fm_control *c, const double *t, long n_t, const double *x0, int nx,
                         long every, double rtol, double atol, double max_step, double *X, double *TAU, long *n_out,
                         double *t_fault, long *counts)
{
    return fm_radau_with(fm_reduced_rhs, fm_reduced_jacobian, &r->full, c, 0, t, n_t, x0, nx, every, rtol, atol,
                         max_step, X, TAU, n_out, t_fault, counts);
}

/* One RK4 run of the reduced model r, the arguments and results as fm_rk4_run's (x: [q_a, qd_a, z]). */
int fm_reduced_rk4_run(fm_reduced *r, const fm_control *c, const double *t, long n_t, const double *x0, int nx,
                       long every, double *X, double *TAU, long *n_out, double *t_fault)
{
    return fm_rk4_with(fm_reduced_rhs, &r->full, c, t, n_t, x0, nx, every, X, TAU, n_out, t_fault);
}

/* n_runs runs of the reduced model r on one grid (method 0: RK4; 1: generalized-alpha with rho_inf;
   2: Radau IIA with rtol, atol, max_step), each from its row of X0 and from q_d = 0, the arguments
   and results as fm_implicit_batch's (counts: n_runs x 7, fm_radau_run's, the last entry the
   reduced right-hand sides evaluated); LAST (n_runs x nd): each run's dropped coordinates at its
   end; r->solves and r->iterations add up the runs'. */
void fm_reduced_batch(fm_reduced *r, const fm_control *c, int method, const double *t, long n_t, long n_runs,
                      const double *X0, int nx, long every, long n_samples, double rho_inf, double rtol, double atol,
                      double max_step, double *X, double *TAU, int *status, long *n_out, double *t_fault,
                      long *counts, double *LAST)
{
    fm_reduced one = *r;
    double *scratch = (double *)malloc(sizeof(double) * fm_reduced_work_size(r->full.nq, r->full.nj));
    for (long k = 0; k < n_runs; ++k) {
        long *cr = counts + 7 * k;
        double *Xr = X + k * n_samples * nx, *Tr = TAU + k * n_samples * r->full.nj;
        for (int i = 0; i < 7; ++i) cr[i] = 0;
        if (!scratch) { status[k] = FM_NOMEMORY; n_out[k] = 0; continue; }
        one.scratch = scratch;
        one.last = LAST + k * r->nd;
        for (int m = 0; m < r->nd; ++m) one.last[m] = 0.0;
        one.solves = one.iterations = 0;
        if (method == 2)
            status[k] = fm_reduced_radau_run(&one, c, t, n_t, X0 + k * nx, nx, every, rtol, atol, max_step, Xr, Tr,
                                             &n_out[k], &t_fault[k], cr);
        else if (method == 1)
            status[k] = fm_reduced_galpha_run(&one, c, t, n_t, X0 + k * nx, nx, every, rho_inf, Xr, Tr, &n_out[k],
                                              &t_fault[k], &cr[2], &cr[3], &cr[4]);
        else
            status[k] = fm_reduced_rk4_run(&one, c, t, n_t, X0 + k * nx, nx, every, Xr, Tr, &n_out[k], &t_fault[k]);
        if (method != 2) cr[0] = status[k] ? n_out[k] - 1 : n_t - 1;
        cr[6] = one.solves;
        r->solves += one.solves;
        r->iterations += one.iterations;
    }
    free(scratch);
}
"""

_P = ctypes.POINTER(ctypes.c_double)
NOT_CONVERGED = 5  # the status of a run whose dropped coordinates did not converge


def declare(lib) -> None:
    """Type this source's entry points on the loaded loop library ``lib``."""
    vp, P, L, I = ctypes.c_void_p, _P, ctypes.c_long, ctypes.c_int
    lib.fm_reduced_rk4_run.restype = I
    lib.fm_reduced_rk4_run.argtypes = [vp, vp, P, L, P, I, L, P, P, ctypes.POINTER(L), P]
    lib.fm_reduced_galpha_run.restype = I
    lib.fm_reduced_galpha_run.argtypes = [vp, vp, P, L, P, I, L, ctypes.c_double, P, P, ctypes.POINTER(L), P,
                                          ctypes.POINTER(L), ctypes.POINTER(L), ctypes.POINTER(L)]
    lib.fm_reduced_radau_run.restype = I
    lib.fm_reduced_radau_run.argtypes = [vp, vp, P, L, P, I, L, ctypes.c_double, ctypes.c_double, ctypes.c_double, P,
                                         P, ctypes.POINTER(L), P, ctypes.POINTER(L)]
    lib.fm_reduced_loop_jacobian.restype = I
    lib.fm_reduced_loop_jacobian.argtypes = [vp, vp, ctypes.c_double, P, I, P]
    lib.fm_reduced_batch.restype = None
    lib.fm_reduced_batch.argtypes = [vp, vp, I, P, L, L, P, I, L, L, ctypes.c_double, ctypes.c_double, ctypes.c_double,
                                     ctypes.c_double, P, P, ctypes.POINTER(I), ctypes.POINTER(L), P, ctypes.POINTER(L),
                                     P]
    lib.fm_reduced_rhs.restype = I
    lib.fm_reduced_rhs.argtypes = [vp, vp, ctypes.c_double, P, P, P, P]
    lib.fm_reduced_work_size.restype = L
    lib.fm_reduced_work_size.argtypes = [I, I]
