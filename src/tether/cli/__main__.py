"""``python -m tether.cli``: the ``tether`` command."""

from tether.cli import main

if __name__ == "__main__":
    main()
