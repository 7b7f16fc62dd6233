"""One error hierarchy. The CLI turns any IOAdvisorError into a one-line message and an exit code."""


class IOAdvisorError(Exception):
    """Base class of every error ioadvisor reports to users."""

    exit_code = 1


class UsageError(IOAdvisorError):
    """Bad input from the user: unknown system, impossible workload, bad units."""

    exit_code = 2


class ImportFormatError(IOAdvisorError):
    """A source file could not be parsed; names the file and, where known, the line."""

    exit_code = 2

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path, self.line, self.reason = path, line, message
        where = ""
        if path:
            where = f"{path}:{line}: " if line else f"{path}: "
        super().__init__(where + message)

    def at(self, path: str) -> "ImportFormatError":
        """The same error, naming the file it came from."""
        return ImportFormatError(self.reason, path, self.line)


class ConfigError(IOAdvisorError):
    """A center configuration or threshold file is invalid."""

    exit_code = 2


class KBError(IOAdvisorError):
    """The knowledge base cannot be opened or is of a newer schema."""


class SlurmError(IOAdvisorError):
    """A Slurm command failed; `exit_code` is the command's own status where there is one."""

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code:
            self.exit_code = exit_code
