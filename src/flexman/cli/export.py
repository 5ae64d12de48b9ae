"""`flexman export`: the model packaged for other tools (an FMI 2.0 FMU)."""
from __future__ import annotations

import time

from .common import FORMULATIONS, UsageError, load_model, print_json, subcommand, vector


def cmd_export(args) -> int:
    """Write MODEL as an FMU (model exchange and/or co-simulation) and say what it holds."""
    if args.fmu is None:
        raise UsageError("export: give --fmu PATH (the FMU file to write, e.g. arm.fmu)")
    from ..codegen.fmu import ATOL, RTOL, check_path, check_size, check_tolerance, co_simulation_method
    from ..symbolic import derive

    check_path(args.fmu, "--fmu", force=args.force)  # before the work: a bad path fails first
    robot = load_model(args.model)
    check_size(robot)  # before the derivation
    from ..symbolic.kinematics import output_frames

    try:
        frames = output_frames(robot, args.output_frame or ())
    except ValueError as exc:
        raise UsageError(f"--output-frame: {str(exc).removeprefix('output frame: ')}") from None
    if args.step_size is not None and not args.step_size > 0:
        raise UsageError(f"--step-size: must be > 0 (got {args.step_size})")
    controller = None
    if args.controller:
        controller = getattr(robot, "controller", None)
        if not controller:
            raise UsageError(f"--controller: model '{robot.name}' has no controller section")
        from ..control import from_spec

        controller = from_spec(robot, controller)  # the same checks (and messages) as `simulate --controller`
    q0 = vector(args.q0, (robot.n_joints, robot.nq), "--q0")
    if q0 is not None and q0.size < robot.nq:
        import numpy as np

        q0 = np.concatenate([q0, np.zeros(robot.nq - q0.size)])  # flexible coordinates at rest
    method = co_simulation_method(robot, args.method, args.step_size or 1e-3)
    tolerances = {"rtol": RTOL, "atol": ATOL}
    for key in tolerances:
        value = getattr(args, key)
        if value is None:
            continue
        if method != "radau5":
            raise UsageError(f"--{key}: only radau5 has tolerances (co-simulation by {method} here); add "
                             f"--method radau5 or drop --{key}")
        try:
            tolerances[key] = check_tolerance(value, key)
        except ValueError as exc:
            raise UsageError(f"--{exc}") from None
    start = time.perf_counter()
    # the polynomial normal form of M costs seconds and the FMU's dynamics do not use it
    eom = derive(robot, formulation=args.formulation, parameters="symbolic", external=False, reduce_mass_matrix=False)
    path = eom.fmu(args.fmu, kind=args.kind, controller=controller, step_size=args.step_size or 1e-3, q0=q0,
                   force=args.force, output_frames=frames, method=method, rho_inf=args.rho_inf,
                   derivatives=args.derivatives, **tolerances)
    info = {"fmu": str(path), "model": robot.name, "kind": args.kind, "controller": type(controller).__name__ if controller is not None else None,
            "coordinates": list(robot.coordinate_names), "parameters": list(eom.param_values),
            "output_frames": frames, "method": method, "directional_derivatives": args.derivatives,
            "sensors": [c for s in getattr(robot, "sensors", None) or [] for c in s.channel_names],
            "seconds": round(time.perf_counter() - start, 2)}
    if args.json:
        print_json(info)
        return 0
    kinds = {"me": "model exchange", "cs": "co-simulation", "both": "model exchange and co-simulation"}[args.kind]
    outputs = f", {len(info['sensors'])} sensor outputs" if info["sensors"] else ""
    print(f"wrote {path} (FMI 2.0, {kinds}; {robot.nq} coordinates, {len(info['parameters'])} parameters{outputs}"
          f"{f', {type(controller).__name__} controller' if controller is not None else ''}; co-simulation by "
          f"{method}) in {info['seconds']:.1f} s")
    return 0


def register(sub) -> None:
    p = subcommand(sub, "export", cmd_export, "package the model for other tools: an FMI 2.0 FMU "
                   "(Simulink, OpenModelica, Dymola, FMPy)")
    p.add_argument("--fmu", metavar="PATH", help="the FMU file to write (name.fmu)")
    p.add_argument("--kind", choices=("me", "cs", "both"), default="both",
                   help="model exchange (the tool integrates), co-simulation (RK4, generalized-alpha or Radau IIA "
                        "inside) or both (default)")
    p.add_argument("--controller", action="store_true",
                   help="include the model file's controller (PID, computed torque, decoupling); its set-points "
                        "become inputs")
    p.add_argument("--output-frame", action="append", metavar="FRAME",
                   help="also output this link's or named frame's placement (e.g. tool0: tool0_x, ..., tool0_r33); "
                        "repeatable")
    p.add_argument("--step-size", type=float, metavar="H",
                   help="co-simulation: the longest internal step in s (default 1e-3; an FMU parameter)")
    p.add_argument("--method", choices=("auto", "rk4", "generalized_alpha", "radau5"), default="auto",
                   help="co-simulation: the integrator inside (default auto: RK4 where it is stable at the step size "
                        "for the arm's highest mode, else generalized-alpha, implicit; radau5: Radau IIA with "
                        "step-size control for --rtol, --atol)")
    p.add_argument("--rho-inf", type=float, default=0.8, metavar="RHO",
                   help="generalized-alpha's damping of unresolved modes, in [0, 1] (default 0.8)")
    p.add_argument("--rtol", type=float, metavar="R",
                   help="radau5: relative tolerance (default 1e-8; an FMU parameter)")
    p.add_argument("--atol", type=float, metavar="A",
                   help="radau5: absolute tolerance (default 1e-10; an FMU parameter)")
    p.add_argument("--derivatives", action="store_true",
                   help="model exchange: provide directional derivatives (fmi2GetDirectionalDerivative) from the "
                        "model's partial derivatives; not with --controller")
    p.add_argument("--q0", type=float, nargs="+", metavar="Q", help="start values of the joint (or all) coordinates")
    p.add_argument("--formulation", choices=FORMULATIONS, default="newton_euler",
                   help="formulation traced (flexible arms and symbolic parameters use Book's recursion)")
    p.add_argument("--force", action="store_true", help="replace an existing file")
