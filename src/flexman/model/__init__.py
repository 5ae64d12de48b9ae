"""Robot descriptions: data classes, file formats, validation."""
from .errors import ModelError
from .robot import Beam, Drive, Link, MimicRobot, Placement, RigidBody, Robot

__all__ = ["Beam", "Drive", "Link", "MimicRobot", "ModelError", "Placement", "RigidBody", "Robot"]
