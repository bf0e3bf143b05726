"""The container command interpreter: a POSIX shell subset and the utilities lab manifests call."""
from .interpreter import Shell
from .world import FileSystem, Program, StopHandler, World

__all__ = ["FileSystem", "Program", "Shell", "StopHandler", "World"]
