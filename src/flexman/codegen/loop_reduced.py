"""A reduced model's closed loop in C (``fm.reduce``): the dropped coordinates solved at every
right-hand side, a whole RK4 or generalized-alpha run in one call (``fm_reduced_rk4_run``,
``fm_reduced_galpha_run``: the loop's runs with this right-hand side; generalized-alpha's Jacobian
by forward differences).

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

/* One generalized-alpha run of the reduced model r, the arguments and results as fm_galpha_run's (the
   Jacobian by forward differences of fm_reduced_rhs). */
int fm_reduced_galpha_run(fm_reduced *r, const fm_control *c, const double *t, long n_t, const double *x0, int nx,
                          long every, double rho_inf, double *X, double *TAU, long *n_out, double *t_fault,
                          long *iterations, long *jacobians, long *analytic)
{
    return fm_galpha_with(fm_reduced_rhs, &r->full, c, 0, t, n_t, x0, nx, every, rho_inf, X, TAU, n_out, t_fault,
                          iterations, jacobians, analytic);
}

/* One RK4 run of the reduced model r, the arguments and results as fm_rk4_run's (x: [q_a, qd_a, z]). */
int fm_reduced_rk4_run(fm_reduced *r, const fm_control *c, const double *t, long n_t, const double *x0, int nx,
                       long every, double *X, double *TAU, long *n_out, double *t_fault)
{
    return fm_rk4_with(fm_reduced_rhs, &r->full, c, t, n_t, x0, nx, every, X, TAU, n_out, t_fault);
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
    lib.fm_reduced_rhs.restype = I
    lib.fm_reduced_rhs.argtypes = [vp, vp, ctypes.c_double, P, P, P, P]
    lib.fm_reduced_work_size.restype = L
    lib.fm_reduced_work_size.argtypes = [I, I]
