"""The typed messages of a served scope env, as OpenEnv's ``Action``, ``Observation`` and ``State`` models.

OpenEnv's protocol is single-agent: one action in, one observation with one ``reward`` and one ``done``
out. A scope env is a PettingZoo parallel env, so one step carries the action of every agent the client
drives, and the observation carries one ``AgentStep`` per agent, each tagged with its ``role``:

* ``ScopeAction.actions``: ``{agent: act}`` (an int on the act surface, a string on the text surface);
  ``episode_id``, when given, must name the session's current episode (a client that reconnected after a
  server restart learns that its episode is gone instead of stepping a new one).
* ``ScopeObservation.agents``: ``{agent: AgentStep}`` for every driven agent that was live at the step's
  start (PettingZoo's rule); ``live`` the driven agents still live after it; the base class's ``reward``
  is ``agent_0``'s (what a single-agent OpenEnv trainer reads) and ``done`` says the episode is over.

The observation of the act surface travels as plain lists (``observation`` float32 values, ``action_mask``
0/1): any language's JSON reader takes it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, field_validator
from pydantic_core import PydanticCustomError
from typing_extensions import Annotated

# a step's text may not exceed this many characters on the wire; the env's own cap (max_message_chars,
# 4000 by default) then decides in-game, so an over-long message is an in-game error, not a protocol one
MAX_WIRE_TEXT = 65536
MAX_AGENTS = 64  # an action naming more agents than this is malformed (no scope env has near as many)
WireText = Annotated[str, StringConstraints(max_length=MAX_WIRE_TEXT)]


class ScopeAction(Action):
    """One step: the act (or message) of each agent the client drives."""

    actions: Dict[str, Union[StrictInt, WireText]] = Field(
        ..., max_length=MAX_AGENTS, description="each driven agent's act (act surface) or message (text surface)")
    episode_id: Optional[str] = Field(default=None, max_length=255,
                                      description="the episode this step belongs to (checked when given)")

    @field_validator("actions", mode="before")
    @classmethod
    def _text_cap(cls, value):
        """Say the length cap, not the union's first complaint ("a valid integer"), for an over-long message.

        A ``PydanticCustomError``, not a ``ValueError``: pydantic keeps a ``ValueError`` object in the error's
        context, which OpenEnv's WebSocket loop cannot serialize (it would close the session)."""
        if isinstance(value, dict):
            for agent, act in value.items():
                if isinstance(act, str) and len(act) > MAX_WIRE_TEXT:
                    raise PydanticCustomError(
                        "wire_text_too_long", "actions[{agent}]: a message is at most {cap} characters on the "
                        "wire, got {length}", {"agent": repr(str(agent)[:60]), "cap": MAX_WIRE_TEXT,
                                               "length": len(act)})
        return value


class AgentStep(BaseModel):
    """What one agent gets back from a step (or a reset), tagged with its role."""

    model_config = ConfigDict(extra="forbid")

    role: str
    active: bool = Field(description="whether it is this agent's turn")
    observation: Union[List[float], str] = Field(description="act: the feature vector; text: the transcript")
    action_mask: Optional[List[int]] = Field(default=None, description="act surface: 1 where an act is legal")
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: Dict[str, Any] = Field(default_factory=dict)


class ScopeObservation(Observation):
    """Every driven agent's step, by agent id."""

    agents: Dict[str, AgentStep] = Field(default_factory=dict)
    live: List[str] = Field(default_factory=list, description="the driven agents still live after this step")
    episode_id: Optional[str] = None


class ScopeState(State):
    """The session's episode: its id, steps, who is live, who the client drives, and the user seat's member."""

    env_id: str = ""
    surface: str = "act"
    live: List[str] = Field(default_factory=list)
    driven: List[str] = Field(default_factory=list)
    member: int = 0
    pool_entries: Optional[int] = Field(default=None, description="population with a checkpoint pool: its size now")
