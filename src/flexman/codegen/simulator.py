"""A stand-alone C simulator of one robot (like DYNAMAN's generated simulation programs).

:func:`program` writes a C file holding the generated forward dynamics and a ``main`` that
integrates ``qdd = M^-1 (S tau - b)`` with fixed-step RK4 under constant joint torques and
prints the trajectory. Its input file (see :func:`write_input`) is plain text, one keyword
per line followed by its numbers::

    dt 0.001
    steps 1000
    every 10          # print every 10th step (optional, default 1)
    q0 0.1 0.2        # nq values
    qd0 0 0           # nq values (optional, default 0)
    tau 0 0           # one per joint (optional, default 0)
    p ...             # parameter values (symbolic-parameter models only; default: the model's)

Output: one line per printed step, ``t q_1 .. q_nq qd_1 .. qd_nq``.
"""
from __future__ import annotations

from pathlib import Path

from ..outputs import write_text
from . import emit
from .sources import header

MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NQ %(nq)d
#define NJ %(nj)d
#define NP %(np)d

static double P[NP + 1] = {%(pvals)s};

static void rhs(const double *x, const double *tau, double *dx)
{
    double qdd[NQ];
    fm_forward_dynamics(x, x + NQ, tau%(parg)s, qdd);
    for (int k = 0; k < NQ; ++k) { dx[k] = x[NQ + k]; dx[NQ + k] = qdd[k]; }
}

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
    double k1[2 * NQ], k2[2 * NQ], k3[2 * NQ], k4[2 * NQ], y[2 * NQ];
    for (long s = 0; s <= steps; ++s) {
        if (s %% every == 0) {
            printf("%%.17g", s * dt);
            for (int k = 0; k < 2 * NQ; ++k) printf(" %%.17g", x[k]);
            printf("\n");
        }
        if (s == steps) break;
        rhs(x, tau, k1);
        for (int k = 0; k < 2 * NQ; ++k) y[k] = x[k] + 0.5 * dt * k1[k];
        rhs(y, tau, k2);
        for (int k = 0; k < 2 * NQ; ++k) y[k] = x[k] + 0.5 * dt * k2[k];
        rhs(y, tau, k3);
        for (int k = 0; k < 2 * NQ; ++k) y[k] = x[k] + dt * k3[k];
        rhs(y, tau, k4);
        for (int k = 0; k < 2 * NQ; ++k) x[k] += dt / 6.0 * (k1[k] + 2 * k2[k] + 2 * k3[k] + k4[k]);
    }
    return 0;
}
"""


def program(eom, path) -> Path:
    """Write the simulator's C source to ``path`` (compile: ``cc -O2 -o sim path -lm``)."""
    prog = eom.program("forward_dynamics")
    pvals = ", ".join(repr(v) for v in eom.param_values.values()) or "0.0"
    text = header(eom, "//", ("forward_dynamics",)) + "// stand-alone RK4 simulator; input file format: see flexman.codegen.simulator\n"
    text += "#include <math.h>\n\n" + emit.function_source("c", prog, "fm_forward_dynamics")
    text += MAIN % dict(nq=eom.nq, nj=eom.n_joints, np=len(eom.param_values), pvals=pvals,
                        parg=", P" if eom.param_values else "")
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
