"""The range of each count ``diagnose`` takes, one definition for the command line (argparse, exit 2, each range in
its ``--help``) and the Python call (a ``ValueError`` naming the argument)."""

LIMITS = {
    "probe_episodes": (1, 10_000), "samples": (1, 1_000), "cards": (0, 64), "persona_states": (0, 10_000),
    "episodes": (1, 100_000), "bootstrap": (0, 100_000), "real_dialogues": (1, 1_000),
    "max_new_tokens": (1, 4_096),
}
