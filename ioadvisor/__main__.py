"""`python -m ioadvisor`: the `ioadvise` command, for where the script is not on PATH."""
from .console import main

if __name__ == "__main__":
    main()
