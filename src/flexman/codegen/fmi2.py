"""The FMI 2.0 C interface, written here from the function signatures the standard publishes,
and the generic C half of a flexman FMU (instance, value access, model exchange, co-simulation).

``DECLARATIONS`` is the header an FMU's sources include (``flexman_fmi2.h``): the FMI 2.0 types,
status codes, callback structure and the prototypes of every function an FMU exports. A
compiler defining ``FMI2_STANDARD_HEADERS`` includes the standard's own ``fmi2Functions.h``
instead (the tests compile the sources both ways, so the two cannot differ unnoticed).

``WRAPPER`` is the model-independent C code; :mod:`flexman.codegen.fmu` puts before it the
model's equations and the ``#define``s it reads: NQ, NJ, NP, NZ (controller states), NX
(= 2 NQ + NZ continuous states), NV (real variables), the value references VR_DX, VR_TAU,
VR_REF, VR_Y, VR_P, VR_GAIN, VR_STEP, the arrays V_START, V_LOW, V_STRICT (the least value
fmi2SetReal accepts, strictly or not), V_NAME and GUID, and the functions
``fm_forward_dynamics``, ``fm_position`` and ``fm_read_sensors`` (the sensor outputs from v,
after the derivatives); with a controller (CONTROL > 0, the
kinds of :mod:`flexman.codegen.loop`) also that module's C, the model's ``fm_*_batch`` functions,
N_GAINS, VR_GAIN, GAIN_SLOT, VR_REF, VR_TAU_MAX, VR_TAU_OUT, G_LQR; OFF_AT and LQR_AT are the
controller's switch times (time events; INFINITY: none). METHOD picks the co-simulation's
integrator (0 RK4, 1 generalized-alpha with RHO_INF, 2 Radau IIA with the parameters at VR_RTOL,
VR_ATOL; the implicit ones from the compiled loop's C, :mod:`flexman.codegen.loop` and
:mod:`flexman.codegen.loop_radau`); PARTIALS (with HAS_P_PARTIALS) says the model's
``fm_*_dynamics_derivatives_batch`` are compiled in, for Newton's Jacobian and, with DIRECTIONAL,
model exchange's fmi2GetDirectionalDerivative. Every real variable lives in one array ``v``
indexed by its value reference: states first (q, qd, then the controller's integrals), their
derivatives, inputs, outputs, parameters.
"""
from __future__ import annotations

DECLARATIONS = r"""/* FMI 2.0 declarations used by flexman FMUs, written from the function signatures published
   in the FMI 2.0 standard (fmi-standard.org). Define FMI2_STANDARD_HEADERS to use the
   standard's own fmi2Functions.h instead. */
#ifndef FLEXMAN_FMI2_H
#define FLEXMAN_FMI2_H
#include <stddef.h>

#ifdef FMI2_STANDARD_HEADERS
#include "fmi2Functions.h"
#else
#if defined(_WIN32)
#define FMI2_Export __declspec(dllexport)
#else
#define FMI2_Export __attribute__((visibility("default")))
#endif

typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char *fmi2String;
typedef char fmi2Byte;
#define fmi2True 1
#define fmi2False 0

typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated } fmi2StatusKind;

typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
typedef void *(*fmi2CallbackAllocateMemory)(size_t, size_t);
typedef void (*fmi2CallbackFreeMemory)(void *);
typedef void (*fmi2StepFinished)(fmi2ComponentEnvironment, fmi2Status);

typedef struct {
    const fmi2CallbackLogger logger;
    const fmi2CallbackAllocateMemory allocateMemory;
    const fmi2CallbackFreeMemory freeMemory;
    const fmi2StepFinished stepFinished;
    const fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

typedef struct {
    fmi2Boolean newDiscreteStatesNeeded;
    fmi2Boolean terminateSimulation;
    fmi2Boolean nominalsOfContinuousStatesChanged;
    fmi2Boolean valuesOfContinuousStatesChanged;
    fmi2Boolean nextEventTimeDefined;
    fmi2Real nextEventTime;
} fmi2EventInfo;

/* common functions */
FMI2_Export const char *fmi2GetTypesPlatform(void);
FMI2_Export const char *fmi2GetVersion(void);
FMI2_Export fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                                           const fmi2String categories[]);
FMI2_Export fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                          fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                                          fmi2Boolean visible, fmi2Boolean loggingOn);
FMI2_Export void fmi2FreeInstance(fmi2Component c);
FMI2_Export fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                                           fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime);
FMI2_Export fmi2Status fmi2EnterInitializationMode(fmi2Component c);
FMI2_Export fmi2Status fmi2ExitInitializationMode(fmi2Component c);
FMI2_Export fmi2Status fmi2Terminate(fmi2Component c);
FMI2_Export fmi2Status fmi2Reset(fmi2Component c);
FMI2_Export fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[]);
FMI2_Export fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                      fmi2Integer value[]);
FMI2_Export fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                      fmi2Boolean value[]);
FMI2_Export fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                     fmi2String value[]);
FMI2_Export fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                   const fmi2Real value[]);
FMI2_Export fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                      const fmi2Integer value[]);
FMI2_Export fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                      const fmi2Boolean value[]);
FMI2_Export fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                     const fmi2String value[]);
FMI2_Export fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *FMUstate);
FMI2_Export fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate FMUstate);
FMI2_Export fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *FMUstate);
FMI2_Export fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate FMUstate, size_t *size);
FMI2_Export fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate FMUstate, fmi2Byte serializedState[],
                                             size_t size);
FMI2_Export fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serializedState[], size_t size,
                                               fmi2FMUstate *FMUstate);
FMI2_Export fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[],
                                                    size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                                    size_t nKnown, const fmi2Real dvKnown[], fmi2Real dvUnknown[]);
/* model exchange */
FMI2_Export fmi2Status fmi2EnterEventMode(fmi2Component c);
FMI2_Export fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *fmi2eventInfo);
FMI2_Export fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c);
FMI2_Export fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                                   fmi2Boolean *enterEventMode, fmi2Boolean *terminateSimulation);
FMI2_Export fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time);
FMI2_Export fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx);
FMI2_Export fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real derivatives[], size_t nx);
FMI2_Export fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real eventIndicators[], size_t ni);
FMI2_Export fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx);
FMI2_Export fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x_nominal[], size_t nx);
/* co-simulation */
FMI2_Export fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                                   const fmi2Integer order[], const fmi2Real value[]);
FMI2_Export fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                                    const fmi2Integer order[], fmi2Real value[]);
FMI2_Export fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint,
                                  fmi2Real communicationStepSize, fmi2Boolean noSetFMUStatePriorToCurrentPoint);
FMI2_Export fmi2Status fmi2CancelStep(fmi2Component c);
FMI2_Export fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value);
FMI2_Export fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value);
FMI2_Export fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value);
FMI2_Export fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value);
FMI2_Export fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value);
#endif /* FMI2_STANDARD_HEADERS */
#endif /* FLEXMAN_FMI2_H */
"""

WRAPPER = r"""
/* ---- the FMI 2.0 functions: model independent (see flexman.codegen.fmi2) ---- */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef METHOD
#define METHOD 0           /* co-simulation: 0 classic RK4, 1 generalized-alpha (RHO_INF), 2 Radau IIA (radau5) */
#endif
#ifndef PARTIALS
#define PARTIALS 0         /* 1: the model's partial derivatives are compiled in (fm_*_dynamics_derivatives_batch) */
#endif
#ifndef DIRECTIONAL
#define DIRECTIONAL 0      /* 1: model exchange's fmi2GetDirectionalDerivative (PARTIALS, no controller) */
#endif
#define LOOP (CONTROL || METHOD >= 1 || PARTIALS)  /* the compiled loop's right-hand side */

typedef struct {
    double v[NV];          /* every real variable, indexed by its value reference */
    double time;
    int type;              /* fmi2ModelExchange or fmi2CoSimulation */
    int dirty;             /* derivatives and outputs must be recomputed */
    int check_bodies;      /* parameters were set: check the bodies' inertial parameters before use */
    int logging;
    char name[128];
    fmi2CallbackLogger logger;
    fmi2ComponentEnvironment env;
#if LOOP
    fm_plant plant;        /* the compiled loop's structs (flexman.codegen.loop), pointing into v */
    fm_control control;
    double gains[N_GAINS > 0 ? N_GAINS : 1][NJ * NJ];
    double *work;
#endif
#if METHOD == 1
    double vn[NX];         /* generalized-alpha: the rates of the last step (its own state) */
    int have_v;            /* 0: the next step starts from the rates at its start */
    double *scratch;
    int piv[NX];
#endif
#if METHOD == 2
    fm_radau radau;        /* Radau IIA: its state between steps (flexman.codegen.loop_radau) */
    int radau_ready;       /* 0: the next step starts the method again (state, inputs or parameters set) */
#endif
#if DIRECTIONAL
    double *jac;           /* directional derivatives: df/dx, the partials' scratch, d qdd / d(q, qd, tau) */
#endif
#if METHOD >= 1
    long counts[7];        /* the implicit method's work: steps, rejected steps, Newton iterations, Jacobians,
                              analytic ones, LU decompositions, right-hand sides (logged by fmi2Terminate) */
#endif
} Instance;

static void say(Instance *m, fmi2Status status, const char *category, const char *message)
{
    if (m->logger && (m->logging || status >= fmi2Error))
        m->logger(m->env, m->name, status, category, "%s", message);
}

#if LOOP
/* Point the loop's structs at the instance's variables: the model's M and b, its parameters,
   the torque inputs (applied beside the law), the set-point inputs (q_ref, qd_ref, qdd_ref). */
static void connect_law(Instance *m)
{
    m->plant.nq = NQ;
    m->plant.nj = NJ;
    m->plant.mass_matrix = (void *)fm_mass_matrix_batch;
    m->plant.bias_forces = (void *)fm_bias_forces_batch;
    m->plant.has_p = NP > 0;
    m->plant.p = m->v + VR_P;
    m->plant.p_law = NULL;
    m->plant.act = ACT;
    m->plant.tau_limit = HAS_TAU_LIMIT ? TAU_LIMIT_DATA : NULL;
#if PARTIALS  /* Newton's Jacobian from the model's partial derivatives (the compiled loop's chain rule) */
    m->plant.fd_partials = (void *)fm_forward_dynamics_derivatives_batch;
    m->plant.id_partials = (void *)fm_inverse_dynamics_derivatives_batch;
    m->plant.has_p_partials = HAS_P_PARTIALS;
#endif
    m->control.kind = CONTROL;
    m->control.traj.kind = FM_TRAJ_INPUT;
    m->control.traj.n = NJ;
    m->control.traj.a = m->v + VR_REF;
    m->control.tau_const = m->v + VR_TAU;
    m->control.off_at = OFF_AT;
    m->control.lqr_at = LQR_AT;
    m->control.g_lqr = G_LQR;
    m->control.tau_max = VR_TAU_MAX >= 0 ? m->v + VR_TAU_MAX : NULL;
    const double **slots[5] = {&m->control.kp, &m->control.ki, &m->control.kd, &m->control.gp, &m->control.gv};
    for (int g = 0; g < 5; ++g) *slots[g] = GAIN_SLOT[g] >= 0 ? m->gains[GAIN_SLOT[g]] : NULL;
}

#endif

#if CONTROL
/* The gain matrices: diagonal, from the per-joint gain parameters (they may have been set). */
static void load_gains(Instance *m)
{
    for (int g = 0; g < N_GAINS; ++g)
        for (int j = 0; j < NJ; ++j) m->gains[g][j * NJ + j] = m->v[VR_GAIN + g * NJ + j];
}
#endif

/* dx/dt at time t and states x (inputs and parameters from v); tau: the joint torques applied.
   0, or the compiled loop's fault code (singular mass matrix, torque not finite). */
static int rates(Instance *m, double t, const double *x, double *dx, double *tau)
{
#if LOOP
#if CONTROL
    load_gains(m);
#endif
    return fm_closed_loop_rhs(&m->plant, &m->control, t, x, dx, tau, m->work);
#else
    (void)t;
    for (int j = 0; j < NJ; ++j) tau[j] = m->v[VR_TAU + j];
#if HAS_TAU_LIMIT  /* the drives' limits (the loop's fm_saturate where a law runs) */
    for (int j = 0; j < NJ; ++j) tau[j] = fmin(fmax(tau[j], -TAU_LIMIT_DATA[j]), TAU_LIMIT_DATA[j]);
#endif
    for (int k = 0; k < NQ; ++k) dx[k] = x[NQ + k];
    fm_forward_dynamics(x, x + NQ, tau, m->v + VR_P, dx + NQ);
    return 0;
#endif
}

static int all_finite(const double *x, int n)
{
    for (int k = 0; k < n; ++k)
        if (!isfinite(x[k])) return 0;
    return 1;
}

/* The least eigenvalue of a symmetric 4x4 matrix (cyclic Jacobi rotations) and the largest magnitude. */
static void extreme_eigenvalues(double a[4][4], double *least, double *largest)
{
    for (int sweep = 0; sweep < 60; ++sweep) {
        double off = 0.0;
        for (int p = 0; p < 4; ++p)
            for (int q = p + 1; q < 4; ++q) off += a[p][q] * a[p][q];
        if (off < 1e-300) break;
        for (int p = 0; p < 4; ++p)
            for (int q = p + 1; q < 4; ++q) {
                if (a[p][q] == 0.0) continue;
                double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < 4; ++k) {  /* A <- A G (columns p, q), then G^T A (rows p, q) */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 4; ++k) {
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
            }
    }
    *least = a[0][0];
    *largest = fabs(a[0][0]);
    for (int k = 1; k < 4; ++k) {
        if (a[k][k] < *least) *least = a[k][k];
        if (fabs(a[k][k]) > *largest) *largest = fabs(a[k][k]);
    }
}

/* The body whose inertial parameters (values in v) are not physically consistent, or -1: its
   pseudo-inertia [[tr(I)/2 E - I, h], [h^T, m]] (I about the frame origin, h = m c) must be positive
   semi-definite (mass >= 0, principal moments meeting the triangle inequality, the centre of mass
   inside the body's inertia ellipsoid). */
static int inconsistent_body(const double *v)
{
    for (int b = 0; b < NB; ++b) {
        double x[10];
        for (int k = 0; k < 10; ++k) x[k] = BODY_VR[b][k] >= 0 ? v[BODY_VR[b][k]] : 0.0;
        const double m = x[0], XX = x[4], XY = x[5], XZ = x[6], YY = x[7], YZ = x[8], ZZ = x[9];
        const double half = 0.5 * (XX + YY + ZZ);
        double J[4][4] = {{half - XX, -XY, -XZ, x[1]}, {-XY, half - YY, -YZ, x[2]}, {-XZ, -YZ, half - ZZ, x[3]},
                          {x[1], x[2], x[3], m}};
        double least, largest;
        extreme_eigenvalues(J, &least, &largest);
        if (least < -1e-9 * largest) return b;
    }
    return -1;
}

/* derivatives and outputs from the current time, states, inputs and parameters */
static fmi2Status bodies_checked(Instance *m)
{
    if (!m->check_bodies) return fmi2OK;
    const int b = inconsistent_body(m->v);
    if (b >= 0) {
        char text[320];
        snprintf(text, sizeof text, "%s: the inertial parameters set are not physically consistent (mass >= 0, "
                 "principal moments meeting the triangle inequality I1 + I2 >= I3, the centre of mass inside the "
                 "inertia ellipsoid); set consistent values", BODY_NAME[b]);
        say(m, fmi2Error, "logStatusError", text);
        return fmi2Error;
    }
    m->check_bodies = 0;
    return fmi2OK;
}

static fmi2Status update(Instance *m)
{
    if (!m->dirty) return fmi2OK;
    if (bodies_checked(m) != fmi2OK) return fmi2Error;
    double tau[NJ + 1];
    int fault = rates(m, m->time, m->v, m->v + VR_DX, VR_TAU_OUT >= 0 ? m->v + VR_TAU_OUT : tau);
    fm_position(m->v, m->v + VR_P, m->v + VR_Y);
    fm_read_sensors(m->v);  /* after the derivatives: torque sensors and accelerometers read der(qd) */
    m->dirty = 0;
    if (fault || !all_finite(m->v + VR_DX, NX)) {
        say(m, fmi2Error, "logStatusError", "the derivatives are not finite (singular mass matrix, diverged states "
            "or a torque that is not finite)");
        return fmi2Error;
    }
    return fmi2OK;
}

/* the next time the controller switches (off_at, lqr_at), or INFINITY */
static double next_switch(const Instance *m)
{
    double next = INFINITY;
    if (OFF_AT > m->time) next = OFF_AT;
    if (LQR_AT > m->time && LQR_AT < next) next = LQR_AT;
    return next;
}

const char *fmi2GetTypesPlatform(void) { return "default"; }
const char *fmi2GetVersion(void) { return "2.0"; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories, const fmi2String categories[])
{
    (void)nCategories; (void)categories;
    ((Instance *)c)->logging = loggingOn;
    return fmi2OK;
}

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                              fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                              fmi2Boolean visible, fmi2Boolean loggingOn)
{
    (void)fmuResourceLocation; (void)visible;
    fmi2CallbackLogger logger = functions ? functions->logger : NULL;
    void *env = functions ? functions->componentEnvironment : NULL;
    const char *name = instanceName ? instanceName : "";
    if (fmuGUID && strcmp(fmuGUID, GUID) != 0) {
        if (logger) logger(env, name, fmi2Error, "logStatusError", "GUID %s does not match this binary's %s", fmuGUID, GUID);
        return NULL;
    }
    if ((fmuType == fmi2ModelExchange && !HAS_ME) || (fmuType == fmi2CoSimulation && !HAS_CS)) {
        if (logger) logger(env, name, fmi2Error, "logStatusError", "this FMU was exported without %s",
                           fmuType == fmi2ModelExchange ? "model exchange" : "co-simulation");
        return NULL;
    }
    Instance *m = (Instance *)calloc(1, sizeof(Instance));
    if (!m) return NULL;
    memcpy(m->v, V_START, sizeof(m->v));
    m->type = fmuType;
    m->dirty = 1;
    m->logging = loggingOn;
    m->logger = logger;
    m->env = env;
    strncpy(m->name, name, sizeof(m->name) - 1);
#if LOOP
    m->work = (double *)calloc((size_t)fm_work_size(NQ, NJ), sizeof(double));
    if (!m->work) { free(m); return NULL; }
    connect_law(m);
#endif
#if METHOD == 1
    m->scratch = (double *)calloc((size_t)fm_galpha_scratch(NQ, NJ, NX), sizeof(double));
    if (!m->scratch) { free(m->work); free(m); return NULL; }
#endif
#if METHOD == 2
    if (fm_radau_alloc(&m->radau, fm_closed_loop_rhs, fm_jacobian_analytic, &m->plant, &m->control, 0, NX, m->counts)) {
        free(m->work); free(m); return NULL;
    }
#endif
#if DIRECTIONAL
    m->jac = (double *)calloc((size_t)(NX * NX + fm_partials_work(NQ, NJ) + 2 * NQ * NQ + NQ * NJ), sizeof(double));
    if (!m->jac) { free(m->work); free(m); return NULL; }
#endif
    return m;
}

void fmi2FreeInstance(fmi2Component c)
{
#if LOOP
    if (c) free(((Instance *)c)->work);
#endif
#if METHOD == 1
    if (c) free(((Instance *)c)->scratch);
#endif
#if METHOD == 2
    if (c) fm_radau_release(&((Instance *)c)->radau);
#endif
#if DIRECTIONAL
    if (c) free(((Instance *)c)->jac);
#endif
    free(c);
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                               fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime)
{
    (void)toleranceDefined; (void)tolerance; (void)stopTimeDefined; (void)stopTime;
    ((Instance *)c)->time = startTime;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
fmi2Status fmi2ExitInitializationMode(fmi2Component c) { return update((Instance *)c); }
#if METHOD >= 1
/* The implicit method's work so far, in one log line (category logStatistics; with logging on):
   the counts as fm.simulate's stats name them, and which Newton Jacobian was used. */
static void log_statistics(Instance *m)
{
    const long *n = m->counts, fd = n[3] - n[4];
    char text[512];
    snprintf(text, sizeof text, "%s statistics: steps=%ld rejected_steps=%ld newton_iterations=%ld jacobians=%ld "
             "analytic_jacobians=%ld lu_decompositions=%ld rhs_evaluations=%ld jacobian=%s",
             METHOD == 1 ? "generalized_alpha" : "radau5", n[0], n[1], n[2], n[3], n[4], n[5], n[6],
             !n[3] ? "none" : !fd ? "analytic" : !n[4] ? "finite_differences" : "analytic_where_the_law_allows");
    say(m, fmi2OK, "logStatistics", text);
}
#endif

fmi2Status fmi2Terminate(fmi2Component c)
{
#if METHOD >= 1
    log_statistics((Instance *)c);
#else
    (void)c;
#endif
    return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component c)
{
    Instance *m = (Instance *)c;
    memcpy(m->v, V_START, sizeof(m->v));
    m->time = 0.0;
    m->dirty = 1;
#if METHOD == 1
    m->have_v = 0;
#endif
#if METHOD == 2
    m->radau_ready = 0;
#endif
#if METHOD >= 1
    memset(m->counts, 0, sizeof(m->counts));
#endif
    return fmi2OK;
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[])
{
    Instance *m = (Instance *)c;
    fmi2Status status = update(m);
    for (size_t k = 0; k < nvr; ++k) {
        if (vr[k] >= NV) { say(m, fmi2Error, "logStatusError", "unknown value reference"); return fmi2Error; }
        value[k] = m->v[vr[k]];
    }
    return status;
}

/* Every value is checked before any is stored: finite, and not below its bound (V_LOW). Each body's
   inertial parameters are checked together where they are next used (update): an importer sets them
   one at a time, through values that need not be consistent on their way. */
fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[])
{
    Instance *m = (Instance *)c;
    for (size_t k = 0; k < nvr; ++k) {
        if (vr[k] >= NV || (vr[k] >= VR_DX && vr[k] < VR_DX + NX) || (vr[k] >= VR_Y && vr[k] < VR_P)) {
            say(m, fmi2Error, "logStatusError", "this variable cannot be set (a derivative or an output)");
            return fmi2Error;
        }
        const double x = value[k], low = V_LOW[vr[k]];
        if (!isfinite(x) || x < low || (V_STRICT[vr[k]] && x == low)) {
            char text[256];
            if (!isfinite(x))
                snprintf(text, sizeof text, "%s = %g refused: it must be a finite number; nothing was set",
                         V_NAME[vr[k]], x);
            else
                snprintf(text, sizeof text, "%s = %g refused: it must be %s %g (a physical bound of this "
                         "parameter); nothing was set", V_NAME[vr[k]], x, V_STRICT[vr[k]] ? ">" : ">=", low);
            say(m, fmi2Error, "logStatusError", text);
            return fmi2Error;
        }
    }
    for (size_t k = 0; k < nvr; ++k) {
#if METHOD == 2
        /* a changed state, input or parameter: Radau starts again (rates, Jacobian, first step); an
           importer that sets every input at every step with the same values does not restart it */
        if (m->v[vr[k]] != value[k]) m->radau_ready = 0;
#endif
        m->v[vr[k]] = value[k];
#if METHOD == 1
        if (vr[k] < NX) m->have_v = 0;  /* a new state: generalized-alpha starts again from its rates */
#endif
    }
    if (nvr) m->dirty = m->check_bodies = 1;  /* the bodies are checked when the values are next used */
    return fmi2OK;
}

/* no Integer, Boolean or String variables */
static fmi2Status none(fmi2Component c, size_t nvr)
{
    if (!nvr) return fmi2OK;
    say((Instance *)c, fmi2Error, "logStatusError", "this FMU has only Real variables");
    return fmi2Error;
}
fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Integer value[])
{ (void)vr; (void)value; return none(c, nvr); }
fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2Boolean value[])
{ (void)vr; (void)value; return none(c, nvr); }
fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, fmi2String value[])
{ (void)vr; (void)value; return none(c, nvr); }
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Integer value[])
{ (void)vr; (void)value; return none(c, nvr); }
fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2Boolean value[])
{ (void)vr; (void)value; return none(c, nvr); }
fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr, const fmi2String value[])
{ (void)vr; (void)value; return none(c, nvr); }

/* capabilities this FMU does not declare in its modelDescription.xml */
static fmi2Status unsupported(fmi2Component c, const char *what)
{
    say((Instance *)c, fmi2Error, "logStatusError", what);
    return fmi2Error;
}
fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s) { (void)s; return unsupported(c, "no FMU state"); }
fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) { (void)s; return unsupported(c, "no FMU state"); }
fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s) { (void)s; return unsupported(c, "no FMU state"); }
fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *size)
{ (void)s; (void)size; return unsupported(c, "no FMU state"); }
fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte data[], size_t size)
{ (void)s; (void)data; (void)size; return unsupported(c, "no FMU state"); }
fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte data[], size_t size, fmi2FMUstate *s)
{ (void)s; (void)data; (void)size; return unsupported(c, "no FMU state"); }
#if DIRECTIONAL
/* dvUnknown = d(der x)/d(knowns) dvKnown at the current time, states, inputs and parameters: the
   unknowns derivatives der(...), the knowns states and torque inputs. d(der x)/dx is the compiled
   loop's analytic Jacobian (fm_jacobian_analytic: the model's partial derivatives), d qdd / d tau
   the forward dynamics' partials, zero for a torque at its drive's limit (it is clipped there). */
fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[], size_t nUnknown,
                                        const fmi2ValueReference vKnown_ref[], size_t nKnown,
                                        const fmi2Real dvKnown[], fmi2Real dvUnknown[])
{
    Instance *m = (Instance *)c;
    for (size_t k = 0; k < nUnknown; ++k)
        if (vUnknown_ref[k] < VR_DX || vUnknown_ref[k] >= VR_DX + NX)
            return unsupported(c, "directional derivatives: the unknowns must be state derivatives der(...)");
    for (size_t l = 0; l < nKnown; ++l)
        if (!(vKnown_ref[l] < NX || (vKnown_ref[l] >= VR_TAU && vKnown_ref[l] < VR_TAU + NJ)))
            return unsupported(c, "directional derivatives: the knowns must be states or the torque inputs");
    fmi2Status status = update(m);
    if (status != fmi2OK) return status;
    double f0[NX], tau[NJ + 1];
    double *J = m->jac, *s = J + NX * NX, *Fq = s + fm_partials_work(NQ, NJ), *Fqd = Fq + NQ * NQ, *Ft = Fqd + NQ * NQ;
    if (rates(m, m->time, m->v, f0, tau) || fm_jacobian_analytic(&m->plant, &m->control, 0, m->time, m->v, f0, tau,
                                                               NX, J, s) != FM_OK)
        return unsupported(c, "directional derivatives: the mass matrix is singular at this state");
#if HAS_P_PARTIALS
    fm_forward_dynamics_derivatives_batch(1, m->v, m->v + NQ, tau, m->v + VR_P, Fq, Fqd, Ft);
#else
    fm_forward_dynamics_derivatives_batch(1, m->v, m->v + NQ, tau, Fq, Fqd, Ft);
#endif
    for (size_t k = 0; k < nUnknown; ++k) {
        const int i = (int)(vUnknown_ref[k] - VR_DX);
        double sum = 0.0;
        for (size_t l = 0; l < nKnown; ++l) {
            const fmi2ValueReference v = vKnown_ref[l];
            double d = 0.0;
            if (v < NX)
                d = J[(long)i * NX + v];
            else if (i >= NQ && i < 2 * NQ) {
                const int j = (int)(v - VR_TAU);
                if (!(HAS_TAU_LIMIT && fabs(tau[j]) >= TAU_LIMIT_DATA[j])) d = Ft[(i - NQ) * NJ + j];
            }
            sum += d * dvKnown[l];
        }
        dvUnknown[k] = sum;
    }
    return fmi2OK;
}
#else
fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[], size_t nUnknown,
                                        const fmi2ValueReference vKnown_ref[], size_t nKnown,
                                        const fmi2Real dvKnown[], fmi2Real dvUnknown[])
{
    (void)vUnknown_ref; (void)nUnknown; (void)vKnown_ref; (void)nKnown; (void)dvKnown; (void)dvUnknown;
    return unsupported(c, "no directional derivatives (export with derivatives for model exchange's)");
}
#endif

/* ---- model exchange: the importer integrates x = [q, qd, controller integrals] ---- */
fmi2Status fmi2EnterEventMode(fmi2Component c) { (void)c; return fmi2OK; }

/* The only events are the controller's switch times (time events): there the law changes. */
fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *info)
{
    Instance *m = (Instance *)c;
    double next = next_switch(m);
    info->newDiscreteStatesNeeded = fmi2False;
    info->terminateSimulation = fmi2False;
    info->nominalsOfContinuousStatesChanged = fmi2False;
    info->valuesOfContinuousStatesChanged = fmi2False;
    info->nextEventTimeDefined = isfinite(next) ? fmi2True : fmi2False;
    info->nextEventTime = isfinite(next) ? next : 0.0;
    m->dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) { (void)c; return fmi2OK; }

fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                       fmi2Boolean *enterEventMode, fmi2Boolean *terminateSimulation)
{
    (void)c; (void)noSetFMUStatePriorToCurrentPoint;
    *enterEventMode = fmi2False;
    *terminateSimulation = fmi2False;
    return fmi2OK;
}

fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time)
{
    Instance *m = (Instance *)c;
    m->time = time;
    m->dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx)
{
    Instance *m = (Instance *)c;
    if (nx != NX) return unsupported(c, "wrong number of continuous states");
    memcpy(m->v, x, NX * sizeof(double));
    m->dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real derivatives[], size_t nx)
{
    Instance *m = (Instance *)c;
    if (nx != NX) return unsupported(c, "wrong number of continuous states");
    fmi2Status status = update(m);
    memcpy(derivatives, m->v + VR_DX, NX * sizeof(double));
    return status;
}

fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real eventIndicators[], size_t ni)
{
    (void)eventIndicators;
    return ni ? unsupported(c, "this FMU has no event indicators") : fmi2OK;
}

fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx)
{
    if (nx != NX) return unsupported(c, "wrong number of continuous states");
    memcpy(x, ((Instance *)c)->v, NX * sizeof(double));
    return fmi2OK;
}

fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x_nominal[], size_t nx)
{
    if (nx != NX) return unsupported(c, "wrong number of continuous states");
    for (size_t k = 0; k < nx; ++k) x_nominal[k] = 1.0;
    return fmi2OK;
}

/* ---- co-simulation: fixed-step classic RK4 or generalized-alpha inside, inputs held over the communication step ---- */
fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                       const fmi2Integer order[], const fmi2Real value[])
{
    (void)vr; (void)nvr; (void)order; (void)value;
    return unsupported(c, "inputs are held constant over a step (no input derivatives)");
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                        const fmi2Integer order[], fmi2Real value[])
{
    (void)vr; (void)nvr; (void)order; (void)value;
    return unsupported(c, "no output derivatives");
}

/* One communication step: n equal RK4 (or generalized-alpha) steps, n the least with H / n <= step_size. */
fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize,
                      fmi2Boolean noSetFMUStatePriorToCurrentPoint)
{
    (void)noSetFMUStatePriorToCurrentPoint;
    Instance *m = (Instance *)c;
    if (bodies_checked(m) != fmi2OK) return fmi2Error;
    const double H = communicationStepSize, h_max = m->v[VR_STEP];
    if (!(h_max > 0.0) || !isfinite(h_max)) return unsupported(c, "step_size must be a positive number");
    if (!(H >= 0.0)) return unsupported(c, "the communication step size must not be negative");
    const double steps = ceil(H / h_max * (1.0 - 1e-12));
    if (!(steps <= 1e8))  /* also catches the overflow of a (long) cast: 1e-300 once took one step */
        return unsupported(c, "step_size is too small for this communication step (more than 1e8 steps); "
                              "use a larger step_size");
    long n = (long)steps;
    if (n < 1) n = 1;
    const double h = H / n;
    double *x = m->v;
#if METHOD == 1
    /* generalized-alpha (flexman.codegen.loop's fm_galpha_step, Jacobian by forward differences): n
       equal steps, the rates carried from step to step and across communication steps */
    double f0[NX], tau[NJ + 1];
    for (long s = 0; s < n && H > 0.0; ++s) {
        const double t = currentCommunicationPoint + s * h;
        long *counts = m->counts, before = counts[2], jacobians = counts[3], analytic = counts[4];
        int fault = rates(m, t, x, f0, tau);
        if (!fault && !m->have_v) { memcpy(m->vn, f0, sizeof(f0)); m->have_v = 1; }
        if (!fault) fault = fm_galpha_step(0, &m->plant, &m->control, t, h, RHO_INF, x, m->vn, f0, tau, NX, m->scratch,
                                           m->piv, &counts[2], &counts[3], &counts[4]);
        /* per step the rates at its start and one per Newton iteration; NX per Jacobian by forward
           differences; one LU per Jacobian */
        counts[6] += 1 + (counts[2] - before) + NX * ((counts[3] - jacobians) - (counts[4] - analytic));
        counts[5] += counts[3] - jacobians;
        ++counts[0];
        if (fault || !all_finite(x, NX)) {
            say(m, fmi2Error, "logStatusError", "the state became non-finite, the mass matrix singular or a Newton "
                "iteration did not converge (the run diverged: use a smaller step_size)");
            return fmi2Error;
        }
    }
#elif METHOD == 2
    /* Radau IIA (flexman.codegen.loop_radau, the compiled loop's): steps of its own choosing for rtol,
       atol (parameters) and at most step_size long, the last one ending at the communication point;
       the method's state (step size, Jacobian, the last step's polynomial) carried to the next
       communication step unless something was set in between */
    const double t_end = currentCommunicationPoint + H;
    (void)n;
    (void)h;
    if (H > 0.0) {
        int fault = FM_OK;
#if CONTROL
        load_gains(m);
#endif
        const double gap = fabs(m->radau.tc - currentCommunicationPoint);
        if (m->radau_ready && gap <= 1e-12 * fmax(1.0, fabs(currentCommunicationPoint)))
            m->radau.tc = currentCommunicationPoint;  /* the importer's time, where it rounds t + H otherwise */
        else {
            fault = fm_radau_start(&m->radau, currentCommunicationPoint, x, t_end, m->v[VR_RTOL], m->v[VR_ATOL], h_max,
                                   NULL);
            m->radau_ready = !fault;
        }
        while (!fault && m->radau.tc < t_end) fault = fm_radau_step(&m->radau, t_end, NULL);
        if (fault) {
            m->radau_ready = 0;
            say(m, fmi2Error, "logStatusError", "Radau IIA stopped: the state became non-finite, the mass matrix "
                "singular or Newton's iteration failed until the step size fell to round-off (check the model and "
                "its inputs, or loosen rtol/atol)");
            return fmi2Error;
        }
        memcpy(x, m->radau.y, NX * sizeof(double));
    }
#else
    double k1[NX], k2[NX], k3[NX], k4[NX], y[NX], tau[NJ + 1];
    int fault = 0;
    for (long s = 0; s < n && H > 0.0 && !fault; ++s) {
        const double t = currentCommunicationPoint + s * h;
        fault |= rates(m, t, x, k1, tau);
        for (int k = 0; k < NX; ++k) y[k] = x[k] + 0.5 * h * k1[k];
        fault |= rates(m, t + 0.5 * h, y, k2, tau);
        for (int k = 0; k < NX; ++k) y[k] = x[k] + 0.5 * h * k2[k];
        fault |= rates(m, t + 0.5 * h, y, k3, tau);
        for (int k = 0; k < NX; ++k) y[k] = x[k] + h * k3[k];
        fault |= rates(m, t + h, y, k4, tau);
        for (int k = 0; k < NX; ++k) y[k] = x[k] + h / 6.0 * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + k4[k]);
        if (fault || !all_finite(y, NX)) {
            say(m, fmi2Error, "logStatusError", "the state became non-finite or the mass matrix singular (the run "
                "diverged: use a smaller step_size)");
            return fmi2Error;
        }
        memcpy(x, y, sizeof(y));
    }
#endif
    m->time = currentCommunicationPoint + H;
    m->dirty = 1;
    return update(m);
}

fmi2Status fmi2CancelStep(fmi2Component c) { return unsupported(c, "steps cannot be cancelled (they are not asynchronous)"); }

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value)
{ (void)s; (void)value; return unsupported(c, "steps are not asynchronous"); }

fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value)
{
    if (s == fmi2LastSuccessfulTime) { *value = ((Instance *)c)->time; return fmi2OK; }
    return unsupported(c, "steps are not asynchronous");
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value)
{ (void)s; (void)value; return unsupported(c, "steps are not asynchronous"); }

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value)
{
    if (s == fmi2Terminated) { *value = fmi2False; return fmi2OK; }
    return unsupported(c, "steps are not asynchronous");
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value)
{ (void)s; (void)value; return unsupported(c, "steps are not asynchronous"); }
"""
