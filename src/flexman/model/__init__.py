"""Robot descriptions: data classes, file formats, validation."""
from .errors import ModelError
from .robot import Beam, Link, Placement, RigidBody, Robot

__all__ = ["Beam", "Link", "ModelError", "Placement", "RigidBody", "Robot"]
