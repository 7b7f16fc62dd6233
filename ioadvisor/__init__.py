"""ioadvisor: parallel I/O advice from measured runs."""
__version__ = "0.1.0"
