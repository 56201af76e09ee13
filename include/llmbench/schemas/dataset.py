"""A workload's dataset: prompts from a file the user owns (`workload.dataset`), and its index.

Three formats, one conversation (or prompt) a line: `openai` (JSONL, `{"messages": [{role,
content}], "max_tokens"?}`), `sharegpt` (JSONL, `{"conversations": [{from, value}]}`) and `text`
(one prompt a line; blank lines skipped). The file is read in one streamed pass (scan): each line
is checked, its byte offset kept if it passes the length filter, and the whole file hashed; a
request then reads only its own line (DatasetIndex.conversation). A 1 GB file costs 8 bytes per
kept line in memory, never the file. Bad data is refused with one line naming the file, the line
number and what is wrong (DatasetError), at plan time, before anything is sent or published.
"""

from __future__ import annotations

import hashlib
import json
import random
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from llmbench.schemas.kinds import ConfigError

__all__ = [
    "Conversation",
    "DatasetError",
    "DatasetIndex",
    "DatasetSpec",
    "DatasetSummary",
    "MultiTurn",
    "Trace",
    "TraceSpec",
    "scan",
    "scan_trace",
]

Format = Literal["openai", "sharegpt", "text"]
# ShareGPT speaker names, as the published ShareGPT dumps and vLLM's loader use them
_SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system"}
_CHAT_ROLES = {"system", "user", "assistant"}
# What an output length "from the data" is when the data gives an answer but no max_tokens
# (ShareGPT): the reference answer's characters / 4, the usual characters-per-token of English BPE.
CHARS_PER_TOKEN_ESTIMATE = 4


class DatasetError(ConfigError):
    """A dataset file that cannot be used: unreadable, a malformed line, empty after filtering (a
    config error: the plan refuses it, exit status 2)."""


class DatasetSpec(BaseModel):
    """`workload.dataset`: where the prompts come from instead of generated word lists."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="the file: relative to the config's folder, or absolute")
    format: Format = Field(description="openai (JSONL messages), sharegpt (JSONL conversations) or text (a line each)")
    sample: Literal["with_replacement", "without_replacement"] = Field(
        "with_replacement",
        description="seeded draw of a row per request; without_replacement: no row twice within a level",
    )
    min_input_chars: int | None = Field(
        None, ge=1, description="keep rows whose first prompt has at least this many characters"
    )
    max_input_chars: int | None = Field(
        None, ge=1, description="keep rows whose first prompt has at most this many characters"
    )
    output: Literal["workload", "data", "model"] = Field(
        "workload",
        description="output length: workload.output_tokens (ignore_eos), the row's own (max_tokens, or its answer's "
        "characters / 4), or the model's natural stop (no ignore_eos; workload.output_tokens' largest value caps it)",
    )

    @model_validator(mode="after")
    def _filter(self) -> DatasetSpec:
        if self.min_input_chars and self.max_input_chars and self.min_input_chars > self.max_input_chars:
            raise ValueError(f"min_input_chars {self.min_input_chars} > max_input_chars {self.max_input_chars}")
        return self

    def filter_label(self) -> str | None:
        """The length filter in words (the warehouse's dataset_filter), None without one."""
        parts = []
        if self.min_input_chars:
            parts.append(f"input_chars >= {self.min_input_chars}")
        if self.max_input_chars:
            parts.append(f"input_chars <= {self.max_input_chars}")
        return " and ".join(parts) or None


class MultiTurn(BaseModel):
    """`workload.multi_turn`: each dataset row is a session sent turn by turn on one stream, each
    turn carrying the history before it, think_time_s apart. history "data": the row's own
    assistant turns (every turn's body is known before the session starts); "model": the model's
    own answers to the session's earlier turns (what a chat user's next turn really carries, and
    what a prefix cache really reuses), each next turn built once the previous answer arrived."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    think_time_s: float = Field(0.0, ge=0, le=3600, description="pause between a turn's answer and the next turn")
    max_turns: int = Field(8, ge=1, le=1000, description="user turns of a session sent at most")
    history: Literal["data", "model"] = Field(
        "data",
        description="the assistant turns a next turn carries: the row's own (data) or the model's answers (model)",
    )


class DatasetSummary(BaseModel):
    """What a run records about its dataset (plan output, the `targets` row)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    format: str  # a dataset's Format, or mooncake-trace
    sha256: str
    rows_total: int  # conversations (non-blank lines) in the file
    rows_used: int  # of them, those that pass the length filter: what requests draw from
    filter: str | None
    sample: str
    output: str


@dataclass(frozen=True)
class Conversation:
    """One row: its turns as (role, content), in order; the first prompt is the turns up to the first
    user turn. max_tokens: the row's own output length, where it has one."""

    turns: tuple[tuple[str, str], ...]
    max_tokens: int | None = None

    def user_turns(self) -> list[int]:
        """Where each user turn is: turn k of a session sends turns[: user_turns()[k] + 1]."""
        return [k for k, (role, _) in enumerate(self.turns) if role == "user"]

    def answer_tokens(self, upto: int) -> int | None:
        """The output length the row gives the user turn at `upto`: its max_tokens, else the
        answer after it, its characters / 4."""
        if self.max_tokens is not None:
            return self.max_tokens
        if upto + 1 < len(self.turns) and self.turns[upto + 1][0] == "assistant":
            return max(1, round(len(self.turns[upto + 1][1]) / CHARS_PER_TOKEN_ESTIMATE))
        return None

    @property
    def first_prompt(self) -> tuple[tuple[str, str], ...]:
        """The system turns before it and the first user turn: what a single-turn request sends."""
        for k, (role, _) in enumerate(self.turns):
            if role == "user":
                return self.turns[: k + 1]
        raise ValueError("no user turn")  # scan refuses such a row

    @property
    def first_answer_tokens(self) -> int | None:
        """The row's own output length: its max_tokens, else its first answer's characters / 4."""
        return self.answer_tokens(len(self.first_prompt) - 1)


def _turns_openai(row: object) -> Conversation:
    if not isinstance(row, dict) or not isinstance(row.get("messages"), list):
        raise ValueError('expected an object with a "messages" list')
    turns = []
    for m in row["messages"]:
        if not isinstance(m, dict) or m.get("role") not in _CHAT_ROLES or not isinstance(m.get("content"), str):
            raise ValueError(f"a message must be {{role: system|user|assistant, content: string}}, got {str(m)[:60]}")
        turns.append((m["role"], m["content"]))
    max_tokens = row.get("max_tokens")
    if max_tokens is not None and (type(max_tokens) is not int or max_tokens < 1):
        raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    return Conversation(tuple(turns), max_tokens)


def _turns_sharegpt(row: object) -> Conversation:
    if not isinstance(row, dict) or not isinstance(row.get("conversations"), list):
        raise ValueError('expected an object with a "conversations" list')
    turns = []
    for m in row["conversations"]:
        if not isinstance(m, dict) or m.get("from") not in _SHAREGPT_ROLES or not isinstance(m.get("value"), str):
            raise ValueError(f"a turn must be {{from: human|gpt|system, value: string}}, got {str(m)[:60]}")
        turns.append((_SHAREGPT_ROLES[m["from"]], m["value"]))
    return Conversation(tuple(turns))


def parse_line(fmt: Format, line: bytes) -> Conversation:
    """One non-blank line as a conversation; ValueError saying what is wrong with it."""
    if fmt == "text":
        return Conversation((("user", line.decode("utf-8").rstrip("\r\n")),))
    try:
        row = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"malformed JSON ({str(e)[:80]})") from None
    conv = _turns_openai(row) if fmt == "openai" else _turns_sharegpt(row)
    if not any(role == "user" for role, _ in conv.turns):
        raise ValueError("conversation without a user turn")
    return conv


@dataclass
class DatasetIndex:
    """A scanned dataset: the byte offset of every row that passed the filter, and the file's hash.
    Requests read their own row from the file (conversation), so it holds 8 bytes per row."""

    path: Path
    format: Format
    sha256: str
    rows_total: int
    offsets: array  # of the rows used, in file order
    max_data_tokens: int | None = None  # the largest output length a row gives (output: data)
    _order: array | None = field(default=None, repr=False)  # without replacement: a seeded permutation

    @property
    def rows_used(self) -> int:
        return len(self.offsets)

    def row_of(self, seed: int, index: int, replacement: bool) -> int:
        """Which row request `index` sends: seeded, the same for the same (seed, index) on every run.
        Without replacement, a seeded permutation of the rows: n consecutive requests (a level)
        send n distinct rows while n <= rows_used."""
        n = len(self.offsets)
        if replacement:
            return random.Random(f"{seed}:dataset:{index}").randrange(n)
        if self._order is None:
            order = list(range(n))
            random.Random(f"{seed}:dataset").shuffle(order)
            self._order = array("q", order)
        return self._order[index % n]

    def conversation(self, row: int) -> Conversation:
        with open(self.path, "rb") as f:
            f.seek(self.offsets[row])
            return parse_line(self.format, f.readline())


def scan(spec: DatasetSpec) -> DatasetIndex:
    """One streamed pass over the file: every line checked, the rows the filter keeps indexed, the
    whole file hashed. DatasetError (one line: file, line number, what is wrong) on a bad line, an
    unreadable file or no row left."""
    path = Path(spec.path)
    sha = hashlib.sha256()
    offsets = array("q")
    total = 0
    max_data: int | None = None
    try:
        with open(path, "rb") as f:
            offset = 0
            for lineno, line in enumerate(f, 1):
                sha.update(line)
                here, offset = offset, offset + len(line)
                if not line.strip():
                    continue
                try:
                    conv = parse_line(spec.format, line)
                except ValueError as e:
                    raise DatasetError(f"dataset {path}: line {lineno}: {e}") from None
                total += 1
                chars = sum(len(text) for _, text in conv.first_prompt)
                if (spec.min_input_chars and chars < spec.min_input_chars) or (
                    spec.max_input_chars and chars > spec.max_input_chars
                ):
                    continue
                if spec.output == "data":
                    tokens = conv.first_answer_tokens
                    if tokens is None:
                        raise DatasetError(
                            f"dataset {path}: line {lineno}: output: data, but the row has neither max_tokens "
                            "nor an answer"
                        )
                    max_data = max(max_data or 0, tokens)
                offsets.append(here)
    except OSError as e:
        raise DatasetError(f"dataset {path}: cannot read it ({e.strerror or e})") from None
    if not total:
        raise DatasetError(f"dataset {path}: empty dataset (no row)")
    if not offsets:
        raise DatasetError(f"dataset {path}: no row passes the filter {spec.filter_label()} (of {total} rows)")
    return DatasetIndex(path, spec.format, sha.hexdigest(), total, offsets, max_data)


def summary(spec: DatasetSpec, index: DatasetIndex) -> DatasetSummary:
    return DatasetSummary(
        path=str(index.path),
        format=index.format,
        sha256=index.sha256,
        rows_total=index.rows_total,
        rows_used=index.rows_used,
        filter=spec.filter_label(),
        sample=spec.sample,
        output=spec.output,
    )


class TraceSpec(BaseModel):
    """`workload.trace`: a request trace replayed open loop at its own times (the Mooncake JSONL
    that AIPerf and vLLM read: `timestamp` ms from the start, `input_length`, `output_length`,
    optional `hash_ids`, one block of block_tokens prompt tokens each: equal ids, equal blocks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="the trace file: relative to the config's folder, or absolute")
    time_scale: float = Field(
        1.0, gt=0, le=1000, description="send at timestamp x time_scale (0.5: twice as fast; 2: half as fast)"
    )
    block_tokens: int = Field(512, ge=1, le=1_000_000, description="prompt tokens per hash id (Mooncake: 512)")
    max_lateness_ms_p99: float = Field(
        50.0, gt=0, description="a level whose send lateness p99 exceeds this was not offered as scheduled"
    )


@dataclass(frozen=True)
class Trace:
    """A checked trace: its rows, in order (timestamps never go backwards)."""

    path: Path
    sha256: str
    timestamps_ms: array  # float64
    input_lengths: array  # int64
    output_lengths: array
    hash_ids: tuple[tuple[int, ...], ...]

    def __len__(self) -> int:
        return len(self.timestamps_ms)


def scan_trace(spec: TraceSpec) -> Trace:
    """The whole trace checked, in one pass: DatasetError (file, line number, what is wrong) on a
    malformed line, a missing or non-positive length, a timestamp going backwards, no row."""
    path = Path(spec.path)
    sha = hashlib.sha256()
    ts, ins, outs = array("d"), array("q"), array("q")
    hashes: list[tuple[int, ...]] = []
    try:
        with open(path, "rb") as f:
            for lineno, line in enumerate(f, 1):
                sha.update(line)
                if not line.strip():
                    continue
                where = f"trace {path}: line {lineno}"
                try:
                    row = json.loads(line)
                except (ValueError, UnicodeDecodeError) as e:
                    raise DatasetError(f"{where}: malformed JSON ({str(e)[:80]})") from None
                if not isinstance(row, dict):
                    raise DatasetError(f"{where}: expected an object with timestamp, input_length, output_length")
                t: Any = row.get("timestamp")
                n_in: Any = row.get("input_length")
                n_out: Any = row.get("output_length")
                if type(t) not in (int, float) or t < 0:
                    raise DatasetError(f"{where}: timestamp must be a number of ms >= 0, got {t!r}")
                for name, v in (("input_length", n_in), ("output_length", n_out)):
                    if type(v) is not int or v < 1:
                        raise DatasetError(f"{where}: {name} must be a positive integer, got {v!r}")
                if ts and t < ts[-1]:
                    raise DatasetError(f"{where}: timestamps go backwards ({t} ms after {ts[-1]:g} ms)")
                ids = row.get("hash_ids") or []
                if not isinstance(ids, list) or any(type(h) is not int for h in ids):
                    raise DatasetError(f"{where}: hash_ids must be a list of integers")
                ts.append(float(t))
                ins.append(n_in)
                outs.append(n_out)
                hashes.append(tuple(ids))
    except OSError as e:
        raise DatasetError(f"trace {path}: cannot read it ({e.strerror or e})") from None
    if not ts:
        raise DatasetError(f"trace {path}: empty trace (no row)")
    return Trace(path, sha.hexdigest(), ts, ins, outs, tuple(hashes))
