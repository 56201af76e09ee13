"""Write the traffic dataset the project ships (include/llmbench/config/traffic/): seeded, so running it
again writes the same bytes. Made by the project from its own word lists and sentence patterns:
nothing is downloaded or copied from a published dataset.

  conversations.jsonl  300 chat conversations, OpenAI form (one a line: `messages`), 1 to 6 user
                       turns each, of mixed lengths; a third open with one of three shared system
                       prompts (what prefix caching can reuse)
  trace.jsonl          a short request trace, Mooncake form (timestamp ms, input_length,
                       output_length, hash_ids of 512-token blocks): 30 requests over ~10 s, in
                       bursts, many sharing their first block (short answers: a 2-core CPU serves it)

Usage: python scripts/make_traffic_dataset.py [OUT_DIR]
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SEED = 20261205
TOPICS = {
    "cooking": "soup bread rice onion garlic oven pan salt pepper butter flour sauce recipe dinner lunch",
    "travel": "train ticket hotel map city river bridge museum station flight bag passport beach road",
    "gardening": "seed soil water tomato rose tree leaf spring summer shade root pot compost weed",
    "computers": "file folder disk memory screen keyboard program error update network backup password",
    "money": "budget bill rent saving bank loan interest price receipt tax salary shop market",
    "health": "sleep walk water breakfast stretch doctor rest habit morning evening vitamin run",
}
ASKS = [
    "How do I {v} the {a} without the {b}?",
    "Can you explain why my {a} needs {b}?",
    "What is a simple way to {v} a {a} and a {b}?",
    "I have a {a}, a {b} and a little time. What should I do first?",
    "Give me three tips about the {a} and the {b}.",
    "Is it better to {v} the {a} before or after the {b}?",
]
FOLLOW = [
    "Thanks. And what about the {a}?",
    "Could you make that shorter?",
    "Why does the {b} matter so much?",
    "What if I do not have a {a}?",
    "Can you put that in a list of steps?",
    "One more question: how long does the {a} take?",
]
ANSWER = [
    "Start with the {a}, then check the {b}.",
    "Most people {v} the {a} first because the {b} changes slowly.",
    "Keep the {a} close and the {b} ready.",
    "A good habit is to look at the {a} every day.",
    "If the {b} is missing, use a second {a} instead.",
    "That depends on the {a}, but the {b} is usually fine.",
]
VERBS = "plan fix clean start check keep choose sort move store".split()
SYSTEMS = [
    "You are a patient assistant. Answer in plain words, in short paragraphs, and ask a question "
    "back when the request is unclear. " * 3,
    "You are a helpful expert who gives practical, step by step advice. Prefer lists. Never invent "
    "facts you are unsure of; say so instead. " * 3,
    "You are a friendly tutor. Explain the reason behind each step, give one small example, and end "
    "with a one-line summary. " * 3,
]


def _fill(rng: random.Random, pattern: str, words: list[str]) -> str:
    return pattern.format(v=rng.choice(VERBS), a=rng.choice(words), b=rng.choice(words))


def _padding(rng: random.Random, words: list[str], n: int) -> str:
    """n more words of context: a longer message, so lengths are mixed (short questions, long pastes)."""
    if n <= 0:
        return ""
    return " Some context: " + " ".join(rng.choice(words) for _ in range(n)) + "."


def conversation(rng: random.Random) -> dict:
    words = TOPICS[rng.choice(sorted(TOPICS))].split()
    messages = []
    if rng.random() < 1 / 3:
        messages.append({"role": "system", "content": rng.choice(SYSTEMS).strip()})
    turns = rng.choice([1, 1, 2, 2, 3, 3, 4, 5, 6])
    for k in range(turns):
        ask = _fill(rng, rng.choice(ASKS if k == 0 else FOLLOW), words)
        long = rng.random() < 0.25
        messages.append(
            {
                "role": "user",
                "content": ask + _padding(rng, words, rng.randint(40, 160) if long else rng.randint(0, 12)),
            }
        )
        n_sentences = rng.randint(1, 6)
        answer = " ".join(_fill(rng, rng.choice(ANSWER), words) for _ in range(n_sentences))
        messages.append({"role": "assistant", "content": answer})
    return {"messages": messages}


def trace(rng: random.Random) -> list[dict]:
    """30 requests over ~10 s: bursts of 3-8 requests a few ms apart, quiet gaps between them;
    each request's first blocks come from a few shared documents (hash ids 1-5), the rest its own."""
    rows, t, next_id = [], 0.0, 100
    while len(rows) < 30:
        for _ in range(rng.randint(3, 8)):
            shared = [rng.randint(1, 5)] if rng.random() < 0.6 else []
            input_length = rng.choice([64, 128, 256, 384, 512, 640])
            blocks = -(-input_length // 512)
            own = list(range(next_id, next_id + blocks - len(shared)))
            next_id += len(own)
            rows.append(
                {
                    "timestamp": round(t),
                    "input_length": input_length,
                    "output_length": rng.choice([4, 8, 12]),
                    "hash_ids": shared + own,
                }
            )
            t += rng.uniform(1, 40)
        t += rng.uniform(500, 2500)
    return rows[:30]


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "include/llmbench/config/traffic"
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    with open(out / "conversations.jsonl", "w") as f:
        for _ in range(300):
            f.write(json.dumps(conversation(rng)) + "\n")
    with open(out / "trace.jsonl", "w") as f:
        for row in trace(random.Random(SEED + 1)):
            f.write(json.dumps(row) + "\n")
    print(f"wrote {out}/conversations.jsonl and {out}/trace.jsonl")


if __name__ == "__main__":
    main()
