"""Robot descriptions: data classes, file formats, validation."""
from .errors import ModelError
from .robot import Beam, Link, MimicRobot, Placement, RigidBody, Robot

__all__ = ["Beam", "Link", "MimicRobot", "ModelError", "Placement", "RigidBody", "Robot"]
