"""One multi-turn text episode played through an engine's generation server, as token trajectories.

The engine adapters (``slime``, ``verl``, ``openrlhf``) differ only in how they call their server and in
the container they return; everything else is here, once:

* ``EpisodeSpec`` — which episode to play, read from a dataset row: ``env_id`` (any registered id),
  ``seed`` (the scenario: persona, task; every episode given the same seed is dealt the same card, so a
  GRPO group compares like with like), ``episode`` (the episode's own seed within that scenario),
  ``role`` (the agent whose trajectory a one-trajectory engine trains), ``env_kwargs``.
* ``play`` — resets ``scope_envs.make(env_id, surface="text", **env_kwargs)``, and while the episode runs
  asks ``generate(agent, prompt_ids, max_new_tokens)`` for the speaking agent's next turn. The prompt is
  that agent's own token stream so far (token in, token out: a turn is appended as the ids the engine
  sampled, never re-tokenized from text), extended with the chat template's rendering of what happened
  since — the other side's messages, an in-game error if its last message could not be used; a game with
  tools (tau2) passes their schemas to the template, or into the system prompt when it has no tools
  section, as ``scope_envs.train.llm.ppo.Trace`` does for the in-house trainer. The turn's
  text (the sampled ids decoded without special tokens) is what the environment receives.
* ``Trajectory`` — one agent's stream split as the engines want it: ``prompt_ids`` (the system prompt and
  opening, rendered with the generation prompt), ``response_ids`` (everything after), ``response_mask``
  (1 on the ids this agent sampled, 0 on the rest), ``response_logprobs`` (the engine's sampling logprobs
  where the mask is 1, 0.0 elsewhere; ``None`` when the engine returned none) and ``reward`` (the
  environment's total reward to this agent in the episode).

Chat templates: ``scope_envs.agents.llm.templates`` — token-exact for prefix-preserving templates (ChatML,
Qwen2.5, Llama 3.x), a conversation conformed once for templates that refuse its shape (Gemma, Qwen3.5),
and a counted fallback (``Trajectory.template_fallbacks``) for templates that rewrite earlier turns
(Qwen3's ``<think>``). An episode whose
stream would outgrow ``max_len`` (or ``max_response_len``) stops there and is marked ``truncated`` (the
engines' "cut at length");
one the environment truncates (``max_errors`` unreadable messages, a turn limit) is a finished episode
with ``env_truncated`` set, and is paid what the environment paid.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Generated:
    """What the engine's server returned for one turn: the sampled ids, their logprobs if it gave them."""

    token_ids: list[int]
    logprobs: list[float] | None = None


Generate = Callable[[str, list[int], int], Awaitable[Generated]]  # (agent, prompt ids, max new tokens)


@dataclass
class EpisodeSpec:
    env_id: str = "p4g-frozen"
    seed: int = 0
    episode: int | None = None
    role: str | None = None
    env_kwargs: dict = field(default_factory=dict)

    KEYS = ("env_id", "seed", "episode", "role", "env_kwargs")

    @classmethod
    def parse(cls, *sources: Any) -> EpisodeSpec:
        """The first source that names an episode: a dict with ``env_id`` (or one holding it under
        ``"scope_envs"``), or a JSON string of one. Raises ``ValueError`` when none does."""
        for source in sources:
            if isinstance(source, (bytes, str)):
                try:
                    source = json.loads(source)
                except (TypeError, ValueError):
                    continue
            if isinstance(source, Mapping) and isinstance(source.get("scope_envs"), Mapping):
                source = source["scope_envs"]
            if isinstance(source, Mapping) and "env_id" in source:
                unknown = set(source) - set(cls.KEYS)
                if unknown:
                    raise ValueError(f"unknown episode keys {sorted(unknown)}; known keys: {list(cls.KEYS)}")
                spec = cls(**{k: source[k] for k in cls.KEYS if k in source and source[k] is not None})
                if not isinstance(spec.env_id, str):
                    raise ValueError(f"the row's env_id must be an env id string, got {spec.env_id!r:.80}")
                if spec.role is not None and not isinstance(spec.role, str):
                    raise ValueError(f"the row's role must be an agent name such as 'agent_0', got {spec.role!r:.80}")
                if not isinstance(spec.env_kwargs, Mapping) or "surface" in spec.env_kwargs:
                    raise ValueError("the row's env_kwargs must be a dict of make() options other than surface (the "
                                     f"engines play the text surface), got {spec.env_kwargs!r:.80}")
                spec.seed, spec.env_kwargs = _integer("seed", spec.seed), dict(spec.env_kwargs)
                spec.episode = None if spec.episode is None else _integer("episode", spec.episode)
                return spec
        raise ValueError('no episode in the row: give {"env_id": ..., "seed": ...} as its metadata, '
                         "extra_info, label or prompt")


def _integer(key: str, value: Any) -> int:
    """A row's ``seed`` or ``episode`` as an int (an int, an integral float or a numeral string), else a
    ``ValueError`` naming the key."""
    try:
        out = int(value)
        if isinstance(value, bool) or (isinstance(value, float) and out != value):
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"the row's {key} must be an integer, got {value!r:.80}") from None
    return out


@dataclass
class Trajectory:
    agent: str
    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None
    reward: float
    turns: int
    template_fallbacks: int = 0  # turns whose glue the template could not render as a prefix extension

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.response_ids


@dataclass
class EpisodeResult:
    spec: EpisodeSpec
    trajectories: dict[str, Trajectory]  # every agent that spoke, in order of first turn
    outcome: dict[str, float]
    truncated: bool  # cut short because the stream would outgrow max_len or max_response_len
    env_truncated: bool  # ended by the environment's own limits (errors, turns) rather than the game's end
    messages: int  # messages in the conversation (every agent's turns and the simulator's)


def stop_ids(tokenizer) -> set[int]:
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    generation = getattr(tokenizer, "generation_config", None)
    extra = getattr(generation, "eos_token_id", None)
    ids |= set(extra if isinstance(extra, (list, tuple)) else [extra] if extra is not None else [])
    return ids


def _errors(observation) -> list[str]:
    return [line[len("[error] "):] for line in str(observation).splitlines() if line.startswith("[error] ")]


async def play(spec: EpisodeSpec, tokenizer, generate: Generate, *, max_len: int = 8192,
               max_new_tokens: int = 256, max_response_len: int | None = None) -> EpisodeResult:
    """Play one episode of ``spec`` with every live agent's turns from ``generate``; see the module docstring.
    ``max_len`` bounds each agent's whole stream, ``max_response_len`` (for engines that pad responses to a
    fixed length, as verl does) the part after its first prompt."""
    import scope_envs
    from scope_envs.train.llm.ppo import Trace, assistant_suffix

    env = scope_envs.make(spec.env_id, surface="text", **spec.env_kwargs)
    if spec.role is not None and spec.role not in env.possible_agents:  # before the episode, not after it
        env.close()
        raise ValueError(f"{spec.env_id}: role {spec.role!r} is not one of its agents {env.possible_agents}")
    seed = spec.seed if spec.episode is None else spec.episode
    obs, infos = env.reset(seed=seed, options={"scenario_seed": spec.seed})
    suffix, stop_text, stops = assistant_suffix(tokenizer), tokenizer.eos_token or "", stop_ids(tokenizer)
    traces: dict[str, Trace] = {}
    prompt_len: dict[str, int] = {}
    has_logprobs: dict[str, bool] = {}
    cut = env_cut = False
    while env.agents:
        speaker = next((a for a in env.agents if infos[a].get("active")), None)
        if speaker is None:
            raise ValueError(f"{spec.env_id}: no live agent is to speak")
        trace = traces.setdefault(speaker, Trace(speaker, speaker, 0))
        prompt = trace.prompt(tokenizer, infos[speaker]["messages"], _errors(obs[speaker]), infos[speaker].get("tools"))
        prompt_len.setdefault(speaker, len(prompt))
        budget = min(max_new_tokens, max_len - len(prompt))
        if max_response_len is not None:
            budget = min(budget, max_response_len - (len(prompt) - prompt_len[speaker]))
        if budget < 1:
            cut = True
            break
        out = await generate(speaker, prompt, budget)
        ids = [int(t) for t in out.token_ids][:budget]
        logprobs = [float(x) for x in out.logprobs][:len(ids)] if out.logprobs is not None else None
        if logprobs is not None and len(logprobs) != len(ids):
            raise ValueError(f"the engine returned {len(ids)} token ids but {len(logprobs)} logprobs")
        has_logprobs[speaker] = has_logprobs.get(speaker, True) and logprobs is not None
        finished = bool(ids) and ids[-1] in stops
        text = tokenizer.decode(ids[:-1] if finished else ids, skip_special_tokens=True)
        trace.add_turn(tokenizer, ids, logprobs or [0.0] * len(ids), text, finished, suffix, stop_text)
        obs, rewards, _, truncs, infos = env.step({speaker: text})
        for agent, r in rewards.items():
            if agent in traces:
                traces[agent].add_reward(float(r))
        env_cut = env_cut or any(truncs.values())
    game = env.unwrapped.game
    outcome = {k: float(v) for k, v in game.outcome().items()}
    trajectories = {}
    for agent, t in traces.items():
        n = prompt_len[agent]
        if t.turns == 0:
            continue
        # every sampled id fits the limits (the turn budget saw to it); the template's glue after the
        # last turn may not, and is not needed
        end = min(max_len, n + max_response_len) if max_response_len is not None else max_len
        ids, mask, logprobs = t.ids[:end], t.mask[:end], t.logprobs[:end]
        trajectories[agent] = Trajectory(
            agent=agent, prompt_ids=ids[:n], response_ids=ids[n:], response_mask=mask[n:],
            response_logprobs=logprobs[n:] if has_logprobs[agent] else None, reward=float(t.episode_return),
            turns=t.turns, template_fallbacks=t.template_fallbacks)
    env.close()
    return EpisodeResult(spec, trajectories, outcome, cut, env_cut, len(game.history))
