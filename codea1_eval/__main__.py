"""`python -m codea1_eval`: the command line (guarded, as spawned engine processes re-import __main__)."""

from codea1_eval.cli import console

if __name__ == "__main__":
    console()
