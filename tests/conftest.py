"""Shared test fixtures: random but physically valid rigid arms; the evaluation backend.

Simulations run on the default backend, as users get it ("auto": the compiled model where one
is in the cache or building it pays off for the run, else the interpreted one); a test whose
subject is the interpreted path asks for ``backend="numeric"``, and the ``compiled_backend``
fixture makes every build count as worth it however short the run. Nothing compiles in the
background unless a test asks for that. Compiled models go to one fresh cache per test run,
shared by the xdist workers (the controller makes it before they start, they inherit it) and
removed at the end, so no run reuses a model compiled by older code; never ~/.cache.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

os.environ.pop("FLEXMAN_BACKEND", None)  # the default backend, as users run it
os.environ["FLEXMAN_BACKGROUND_COMPILE"] = "0"  # a test that wants background builds asks for them
if "FLEXMAN_CACHE" not in os.environ:  # one cache per run (the xdist workers inherit the controller's)
    os.environ["FLEXMAN_CACHE"] = tempfile.mkdtemp(prefix="flexman-test-cache-")
    os.environ["FLEXMAN_TEST_OWN_CACHE"] = os.environ["FLEXMAN_CACHE"]

from flexman import Link, RigidBody, Robot


def pytest_unconfigure(config):
    """The controller removes the run's cache when it made it (the workers leave it to it)."""
    own = os.environ.get("FLEXMAN_TEST_OWN_CACHE")
    if own and not hasattr(config, "workerinput") and os.environ.get("FLEXMAN_CACHE") == own:
        import shutil

        shutil.rmtree(own, ignore_errors=True)


def random_rotation(rng):
    """A uniformly random rotation matrix (QR of a Gaussian matrix, det +1)."""
    Q, R = np.linalg.qr(rng.standard_normal((3, 3)))
    Q = Q * np.sign(np.diag(R))
    return Q if np.linalg.det(Q) > 0 else -Q


def random_body(rng, mass_range=(0.1, 5.0), com_scale=0.3):
    """A rigid body with a random mass, COM and full inertia R diag(I1, I2, I3) R^T whose
    principal moments satisfy the triangle inequality (a real mass distribution)."""
    mass = rng.uniform(*mass_range)
    i1, i2 = rng.uniform(0.01, 0.5, size=2)
    lo, hi = abs(i1 - i2), i1 + i2
    i3 = rng.uniform(lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo))
    R = random_rotation(rng)
    inertia = R @ np.diag([i1, i2, i3]) @ R.T
    return RigidBody(mass=mass, com=rng.uniform(-com_scale, com_scale, 3), inertia=0.5 * (inertia + inertia.T))


def random_rigid_robot(rng, n, dh="standard", extras=False, special_angles=True):
    """A random rigid serial arm with n joints mixing revolute and prismatic joints.

    DH parameters are random (alpha sometimes a multiple of pi/2, as on real arms); each
    link carries a random rigid body. ``extras=True`` adds random hubs, a payload, joint
    armature and friction (Pinocchio models only the first three).
    """
    links = []
    for i in range(n):
        joint = "revolute" if rng.random() < 0.7 else "prismatic"
        alpha = rng.uniform(-np.pi, np.pi)
        if special_angles and rng.random() < 0.4:
            alpha = rng.choice([-np.pi / 2, 0.0, np.pi / 2, np.pi])
        link = Link(
            joint=joint,
            a=rng.uniform(-0.5, 0.5),
            alpha=alpha,
            d=rng.uniform(-0.5, 0.5),
            theta=rng.uniform(-np.pi, np.pi),
            body=random_body(rng),
            name=f"link{i + 1}",
        )
        if extras:
            if rng.random() < 0.5:
                link.hub = random_body(rng, mass_range=(0.1, 1.0), com_scale=0.1)
            link.armature = rng.uniform(0.0, 0.2)
            link.viscous = rng.uniform(0.0, 0.5)
            link.coulomb = rng.uniform(0.0, 0.5)
        links.append(link)
    gravity = np.array([0.0, 0.0, -9.81])
    if extras:
        gravity = rng.standard_normal(3) * 5.0
    payload = random_body(rng, mass_range=(0.1, 2.0)) if extras else None
    return Robot(links=links, name=f"random{n}", gravity=gravity, dh=dh, payload=payload)


@pytest.fixture
def rigid_robot_factory():
    """The :func:`random_rigid_robot` factory, for tests that prefer fixtures."""
    return random_rigid_robot


@pytest.fixture
def compiled_backend(monkeypatch):
    """Simulations in this test use the compiled model (FLEXMAN_BACKEND=auto, and every build
    counted worth its time however short the run: the tests' runs are short)."""
    from flexman.simulate import backend

    monkeypatch.setenv("FLEXMAN_BACKEND", "auto")
    monkeypatch.setattr(backend, "worth_compiling", lambda robot, work: (True, ""))
