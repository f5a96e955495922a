"""What ``scope-envs train-llm`` and ``scope-envs eval-llm`` do once argparse has read their arguments.

Every check that concerns the user's input runs here before anything slow starts
(a model loads, an episode plays) and raises ``UsageError(argument, message)``;
the command line turns it into argparse's one-line error and exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scope_envs.core.rewards import UnknownUserReward, trained_reward_refusal
from scope_envs.files import benchmark_run_refusal


class UsageError(ValueError):
    """The user's input is wrong: ``argument`` (e.g. ``--group-size``) and why."""

    def __init__(self, argument: str, message: str):
        super().__init__(f"argument {argument}: {message}")
        self.argument = argument


# Config's ValueErrors name a field; the command line names its flag
_FLAGS = (("user_model", "--user-model"), ("clip_low", "--clip-low"), ("lora_r", "--lora-r"), ("gpu_memory_fraction", "--gpu-memory-fraction"), ("old_logprobs", "--old-logprobs"),
          ("group_size", "--group-size"), ("user_reward", "--user-reward"), ("pool_sample", "--pool-sample"),
          ("pool_size", "--pool-size"), ("snapshot_every", "--snapshot-every"), ("kl_estimator", "--kl-estimator"),
          ("LoRA", "--lora"), ("lora", "--lora"), ("algo", "--algo"), ("mode", "--mode"))


def _flag(message: str) -> str:
    return next((flag for key, flag in _FLAGS if key in message), "--mode")


def check_model(argument: str, path: str | None) -> None:
    """``path`` (``argument``'s) holds a model whose tokenizer's chat template renders an episode, before anything
    loads (``panel.check_model_dir``); else a ``UsageError`` naming the folder and what is wrong."""
    from scope_envs.train.llm.panel import AdapterNotModel, PanelError, check_model_dir

    if path is None or path == "tiny":
        return
    try:
        check_model_dir(path)
    except AdapterNotModel as e:  # (its folder holds no tokenizer, but saving one there is no fix)
        base = f"its base model ({e.base!r})" if e.base else "the model it was trained on"
        raise UsageError(argument, f"{e}: pass {base} as {argument} (train-llm trains a model, or new LoRA "
                                   "adapters on it with --lora)") from None
    except PanelError as e:
        raise UsageError(argument, str(e)) from None


def check_env_kwargs(env_id: str, kwargs: dict, argument: str = "--env-kwargs") -> set[str]:
    """The text env ``env_id`` takes ``kwargs`` (made once and closed, before any model loads): its live agents,
    or a ``UsageError`` naming ``argument``. train-llm and eval-llm both check their ``--env-kwargs`` here."""
    import scope_envs

    try:
        env = scope_envs.make(env_id, surface="text", **kwargs)
    except (TypeError, ValueError) as e:
        if isinstance(e, UnknownUserReward) and argument == "--user-reward":
            raise UsageError(argument, trained_reward_refusal(env_id, e)) from None
        given = json.dumps(kwargs, default=str)
        taken, json_taken = env_options(env_id)
        unknown = sorted(set(kwargs) - taken)
        if unknown:  # the regime's own sentence lists only its options, one of which (user) is no JSON
            raise UsageError(argument, f"{env_id} does not take {given}: it takes no option(s) {unknown}; the "
                                       f"options it takes as JSON are {sorted(json_taken)}") from None
        raise UsageError(argument, f"{env_id} does not take {given}: {e}") from None
    live = set(env.possible_agents)
    env.close()
    return live


# the env options that are objects, not JSON (a player, a list of players, a judge callable), or that a trainer
# has no use for (render_mode; gamma: sharpening's deprecated name): never suggested for --env-kwargs
NOT_JSON_OPTIONS = frozenset({"user", "users", "judge", "render_mode", "gamma"})


def env_options(env_id: str) -> tuple[set[str], set[str]]:
    """The keyword options ``make(env_id, surface="text", ...)`` takes: its game factory's own (``max_turns``,
    ``user_reward``, ...), ``max_message_chars`` and its regime's (``regimes.REGIME_KWARGS``); and those of them a
    command line can give as JSON (less ``NOT_JSON_OPTIONS``)."""
    import inspect

    import scope_envs
    from scope_envs.games import game_spec, load
    from scope_envs.regimes import REGIME_KWARGS

    spec = scope_envs.registry[env_id]
    taken = set(REGIME_KWARGS.get(spec.regime, ())) | {"max_message_chars"}
    try:
        factory = load(game_spec(spec.game).factory)
        taken |= {name for name, p in inspect.signature(factory).parameters.items()
                  if p.kind is inspect.Parameter.KEYWORD_ONLY}
    except (KeyError, ValueError, TypeError, ImportError, AttributeError):  # a game declared elsewhere, unreadable
        pass
    return taken, taken - NOT_JSON_OPTIONS


def check_toy_kwargs(kwargs: dict) -> None:
    """llm-toy's options (``agents.llm.toy.make_toy_env``, which swallows unknown ones): ``max_turns``, a positive
    int, and ``target``, a non-empty string (every reply contains an empty one)."""
    unknown = sorted(set(kwargs) - {"max_turns", "target"})
    if unknown:
        raise UsageError("--env-kwargs", f"llm-toy takes no option(s) {unknown}; it takes ['max_turns', 'target']")
    from scope_envs.core.checks import check_int

    try:
        check_int("max_turns", kwargs.get("max_turns", 2), low=1)
    except ValueError as e:
        raise UsageError("--env-kwargs", f"llm-toy: {e}") from None
    target = kwargs.get("target", "a")
    if not isinstance(target, str) or not target:
        raise UsageError("--env-kwargs", f"llm-toy: target must be a non-empty string, got {target!r}")


def vllm_installed() -> bool:
    """Whether vLLM can be imported here, found without importing it (it is heavy, and absent on CPU machines)."""
    import importlib.util

    if "vllm" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("vllm") is not None
    except (ImportError, ValueError):
        return False


VLLM_MISSING = "vLLM is not installed here: pip install 'scope-envs[vllm]' (GPU only)"


def check_panel(path, connect_timeout: float = 5.0):
    """A panel file (``panel.load_panel``) and what playing it needs, checked before any model loads: every
    ``openai`` entry's endpoint answers, vLLM is installed for a ``vllm`` entry; else ``panel.PanelError``."""
    from scope_envs.train.llm import panel

    sims, options = panel.load_panel(path)
    for sim in sims:
        if sim.kind == "openai":
            panel.check_reachable(sim, timeout=connect_timeout)
    for sim in sims:
        if sim.kind == "vllm" and not vllm_installed():
            raise panel.PanelError(f"simulator {sim.name!r} (kind: vllm) needs vLLM, and {VLLM_MISSING}; "
                                   "kind: local serves the same directory with transformers")
    return sims, options


def vllm_missing(spec: str) -> str | None:
    """Why the policy ``spec`` cannot be played here: a ``vllm:`` one where vLLM is not installed; else None."""
    if spec.startswith("vllm:") and not vllm_installed():
        return f"{spec!r} needs vLLM, and {VLLM_MISSING}; the directory alone (without vllm:) loads it with transformers"
    return None


def warn_replaced_run(out) -> None:
    """One line on stderr when ``out`` already holds a train-llm run, which this run replaces (not refused:
    the same folder is reused on purpose, e.g. for a quick rerun)."""
    out = Path(out)
    if (out / "metrics.jsonl").is_file() or (out / "checkpoints").is_dir():
        sys.stderr.write(f"scope-envs train-llm: note: --out {out} already holds a run (metrics.jsonl, "
                         "checkpoints/); this run replaces it (--resume continues it)\n")


def train_llm(args) -> None:
    """``scope-envs train-llm``: check the input, then train (``scope_envs.train.llm.ppo``)."""
    import scope_envs
    from scope_envs.train.llm import ppo

    check_model("--model", args.model)
    check_model("--user-model", args.user_model)
    from scope_envs.train.llm.resume import ResumeError, RunComplete, put_back_interrupted, resume_point, run_settings

    fields = set(ppo.Config.__dataclass_fields__)
    given = {k: v for k, v in vars(args).items() if k in fields and v is not None}
    put_back_interrupted(given.get("out", "runs/llm"))  # before remove_leftovers below sweeps it away
    if given.get("resume") and "dtype" not in given:
        # --dtype's default follows --device (bfloat16 on cuda), which a resumed run may change: its weights keep
        # the run's dtype unless one is given
        saved = run_settings(given.get("out", "runs/llm")).get("dtype")
        if saved in ppo.DTYPES:
            given["dtype"] = saved
    try:
        cfg = ppo.Config(**given)
    except ValueError as e:
        raise UsageError(_flag(str(e)), str(e)) from None
    if "user" in cfg.env_kwargs and cfg.user_model is not None:  # it would be replaced without a word
        raise UsageError("--env-kwargs", "user is the env's user seat, which --user-model fills: give one of them")
    if cfg.env != "llm-toy":  # the env and its options are checked before any model loads
        if cfg.user_reward is not None:  # a reward the game does not pay is --user-reward's mistake
            check_env_kwargs(cfg.env, {**cfg.env_kwargs, "user_reward": cfg.user_reward}, "--user-reward")
        live = check_env_kwargs(cfg.env, ppo.env_kwargs(cfg))
        trained = {"agent_0"} | ({"user_0"} if cfg.mode in ("cotrain", "population") else set()) | (
            {f"user_{k}" for k in range(cfg.members)} if cfg.mode == "members" else set())
        if live != trained:
            game = scope_envs.registry[cfg.env].game
            hint = {"agent": "frozen", "cotrain": "cotrain", "population": "population", "members": "population"}
            raise UsageError("--env", f"{cfg.env}'s live agents are {sorted(live)}, mode {cfg.mode!r} trains "
                                      f"{sorted(trained)}: use e.g. {game}-{hint[cfg.mode]}")
    else:
        if cfg.user_reward is not None:
            raise UsageError("--user-reward", "llm-toy has no user to reward")
        check_toy_kwargs(cfg.env_kwargs)
    if cfg.engine == "vllm" and not vllm_installed():
        raise UsageError("--engine", f"vllm: {VLLM_MISSING}; --engine hf generates with transformers")
    if why := benchmark_run_refusal(cfg.out):
        raise UsageError("--out", why)
    if cfg.resume:  # the checkpoint and its settings, before any model loads
        try:
            resume_point(cfg)
        except RunComplete as e:  # the same command rerun (a requeued job): nothing to do, which is no error
            print(f"scope-envs train-llm: {e}", flush=True)
            return
        except ResumeError as e:
            raise UsageError(e.argument, str(e)) from None
    else:
        warn_replaced_run(cfg.out)
    from scope_envs.files import remove_leftovers

    remove_leftovers(Path(cfg.out) / "checkpoints", (".tmp", ".old"))  # what a SIGKILL cut short: a model's size
    if getattr(args, "threads", 0):
        import torch

        torch.set_num_threads(args.threads)
    from scope_envs.agents.llm.backends import BackendError
    from scope_envs.train.llm.panel import ModelLoadError

    built_before = set(Path(cfg.out).glob("base-model*"))
    try:
        ppo.train(cfg)
    except BackendError as e:  # a missing extra, engine or device: the user's setup, not a bug
        sys.exit(f"scope-envs train-llm: error: {e}")
    except (ModelLoadError, ppo.MaxLenError) as e:  # found once the models load, or the first prompts render
        import shutil

        for built in set(Path(cfg.out).glob("base-model*")) - built_before:  # a refused run leaves no tiny model
            shutil.rmtree(built, ignore_errors=True)
        if isinstance(e, ppo.MaxLenError):
            raise UsageError("--max-len", str(e)) from None
        user = e.path == cfg.user_model and cfg.user_model != cfg.model
        raise UsageError("--user-model" if user else "--model", str(e)) from None


def eval_llm(args) -> None:
    """``scope-envs eval-llm``: check the policies and the panel (reachable endpoints included), then evaluate."""
    from scope_envs.agents.llm.backends import BackendError
    from scope_envs.train.llm import panel

    try:
        sims, options = check_panel(args.panel, connect_timeout=args.connect_timeout)
    except panel.PanelError as e:
        raise UsageError("--panel", str(e)) from None
    twice = sorted({spec for spec in args.policy if args.policy.count(spec) > 1})
    if twice:  # eval.json keys its rows by the spec: a repeat would overwrite its row and be compared with itself
        raise UsageError("--policy", f"{twice[0]!r} is given more than once; give each policy once")
    for spec in args.policy:
        try:
            panel.check_policy(spec, timeout=args.connect_timeout)
        except panel.PanelError as e:
            raise UsageError("--policy", str(e)) from None
        if why := vllm_missing(spec):
            raise UsageError("--policy", why)
    try:
        run_id, vs_kwargs = panel.eval_env_id(args.env, options)
    except panel.PanelError as e:
        raise UsageError("--env", str(e)) from None
    if "user" in args.env_kwargs:  # make(user=...) beside the panel's own would be a TypeError
        raise UsageError("--env-kwargs", "user is the env's user seat, which each panel simulator fills in turn; "
                                         "leave it out")
    check_env_kwargs(run_id, args.env_kwargs)  # the env the panel plays in takes the user's options...
    if vs_kwargs:  # ...and the panel's verbalized-sampling options beside them
        check_env_kwargs(run_id, {**args.env_kwargs, **vs_kwargs}, argument="--panel")
    try:
        report = panel.evaluate(args.policy, args.env, (sims, options), args.episodes, seed=args.seed,
                                max_new_tokens=args.max_new_tokens, env_kwargs=args.env_kwargs, out=args.out)
    except panel.ModelLoadError as e:  # a directory whose files transformers cannot read: found once it loads
        raise UsageError("--panel" if e.role == "simulator" else "--policy", str(e)) from None
    except (BackendError, panel.PanelError) as e:  # e.g. an endpoint that went away mid-run
        sys.exit(f"scope-envs eval-llm: error: {e}")
    print(panel.to_markdown(report))
