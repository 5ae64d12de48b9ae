"""A stand-alone C simulator of one robot (like DYNAMAN's generated simulation programs).

:func:`program` writes a C file holding the generated mass matrix and bias forces, the
compiled simulation loop (:mod:`flexman.codegen.loop`, the same RK4 that ``flexman.simulate``
runs) and a ``main`` that integrates ``M qdd = S tau - b`` under constant joint torques and
prints the trajectory. Its input file (see :func:`write_input`) is plain text, one keyword
per line followed by its numbers::

    dt 0.001
    steps 1000
    every 10          # print every 10th step (optional, default 1)
    q0 0.1 0.2        # nq values
    qd0 0 0           # nq values (optional, default 0)
    tau 0 0           # one per joint (optional, default 0)
    p ...             # parameter values (symbolic-parameter models only; default: the model's)

Output: one line per printed step (every ``every``-th and the last), ``t q_1 .. q_nq qd_1 .. qd_nq``;
a run that diverges prints the steps before it and exits with status 1.
"""
from __future__ import annotations

from pathlib import Path

from ..outputs import write_text
from . import loop
from ..symbolic import emit
from .sources import header

MAIN = r"""
#include <stdio.h>

#define NQ %(nq)d
#define NJ %(nj)d
#define NP %(np)d

static double P[NP + 1] = {%(pvals)s};

static int read_values(FILE *f, double *v, int n, const char *key)
{
    for (int k = 0; k < n; ++k)
        if (fscanf(f, "%%lf", &v[k]) != 1) { fprintf(stderr, "%%s: expected %%d numbers\n", key, n); return 0; }
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %%s input.txt\n", argv[0]); return 2; }
    FILE *f = fopen(argv[1], "r");
    if (!f) { perror(argv[1]); return 2; }
    double dt = 1e-3, x[2 * NQ] = {0}, tau[NJ + 1] = {0};
    long steps = 1000, every = 1;
    char key[64];
    while (fscanf(f, "%%63s", key) == 1) {
        int ok = 1;
        if (key[0] == '#') { int c; while ((c = fgetc(f)) != '\n' && c != EOF) {} continue; }
        if (!strcmp(key, "dt")) ok = fscanf(f, "%%lf", &dt) == 1;
        else if (!strcmp(key, "steps")) ok = fscanf(f, "%%ld", &steps) == 1;
        else if (!strcmp(key, "every")) ok = fscanf(f, "%%ld", &every) == 1;
        else if (!strcmp(key, "q0")) ok = read_values(f, x, NQ, key);
        else if (!strcmp(key, "qd0")) ok = read_values(f, x + NQ, NQ, key);
        else if (!strcmp(key, "tau")) ok = read_values(f, tau, NJ, key);
        else if (!strcmp(key, "p")) ok = read_values(f, P, NP, key);
        else { fprintf(stderr, "unknown keyword '%%s'\n", key); return 2; }
        if (!ok) { fprintf(stderr, "bad value for '%%s'\n", key); return 2; }
    }
    fclose(f);
    if (steps < 1 || every < 1 || !(dt > 0)) { fprintf(stderr, "need steps >= 1, every >= 1, dt > 0\n"); return 2; }
    /* the whole run is one call of the compiled loop (flexman.codegen.loop) under constant torques */
    long n_samples = steps / every + 1 + (steps %% every != 0), n_out = 0;
    double *t = malloc(sizeof(double) * (steps + 1)), *X = malloc(sizeof(double) * n_samples * 2 * NQ);
    double *T = malloc(sizeof(double) * n_samples * (NJ + 1)), t_fault = 0.0;
    if (!t || !X || !T) { fprintf(stderr, "out of memory\n"); return 2; }
    for (long s = 0; s <= steps; ++s) t[s] = s * dt;
    fm_plant plant = {NQ, NJ, (void *)fm_mass_matrix_batch, (void *)fm_bias_forces_batch, %(has_p)d, P, NULL};
    fm_control control;
    memset(&control, 0, sizeof control);
    control.off_at = control.lqr_at = INFINITY;
    control.tau_const = tau;
    int status = fm_rk4_run(&plant, &control, 0, t, steps + 1, x, 2 * NQ, every, X, T, &n_out, &t_fault);
    for (long j = 0; j < n_out; ++j) {
        long s = j * every < steps ? j * every : steps;
        printf("%%.17g", t[s]);
        for (int k = 0; k < 2 * NQ; ++k) printf(" %%.17g", X[j * 2 * NQ + k]);
        printf("\n");
    }
    if (status) fprintf(stderr, "stopped at t = %%g s: the run diverged (status %%d)\n", t_fault, status);
    free(t); free(X); free(T);
    return status ? 1 : 0;
}
"""


def program(eom, path) -> Path:
    """Write the simulator's C source to ``path`` (compile: ``cc -O2 -o sim path -lm``): the
    model's mass matrix and bias forces, the compiled loop (:mod:`.loop`) and a ``main``."""
    pvals = ", ".join(repr(v) for v in eom.param_values.values()) or "0.0"
    what = ("mass_matrix", "bias_forces")
    text = header(eom, "//", what) + "// stand-alone RK4 simulator; input file format: see flexman.codegen.simulator\n"
    text += "#include <math.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
    for w in what:
        prog = eom.program(w)
        text += emit.function_source("c", prog, f"fm_{w}") + emit.c_batch_source(prog, f"fm_{w}")
    text += loop.SOURCE
    text += MAIN % dict(nq=eom.nq, nj=eom.n_joints, np=len(eom.param_values), pvals=pvals,
                        has_p=int(bool(eom.param_values)))
    return write_text(path, text)


def write_input(path, q0, qd0=None, tau=None, dt=1e-3, steps=1000, every=1, p=None) -> Path:
    """Write a simulator input file."""
    fmt = lambda v: " ".join(repr(float(x)) for x in v)
    lines = [f"dt {dt!r}", f"steps {int(steps)}", f"every {int(every)}", f"q0 {fmt(q0)}"]
    if qd0 is not None:
        lines.append(f"qd0 {fmt(qd0)}")
    if tau is not None and len(tau):
        lines.append(f"tau {fmt(tau)}")
    if p is not None and len(p):
        lines.append(f"p {fmt(p)}")
    return write_text(path, "\n".join(lines) + "\n")
