"""The floor of the offered-load bench: the smallest closed loop that can drive a streaming OpenAI
server (aiohttp, one pooled keep-alive connection per stream, nothing recorded but four stamps
per request; it knows the paced server's token chunk, so it drives that server only), so that a
row of llmbench is held against what any client on this core and this server can reach in the
same run, not only against the schedule.

  python benchmarks/reference_client.py URL STREAMS REQUESTS INPUT_TOKENS OUTPUT_TOKENS

Prints one JSON object: the window, output tokens, and per request its stream, send, first-token
and end stamps (perf_counter_ns) and its inter-token gaps' sum and count.
"""

import asyncio
import json
import sys
import time

import aiohttp


async def main(url: str, streams: int, requests: int, input_tokens: int, output_tokens: int) -> dict:
    body = {"model": "paced", "stream": True, "max_tokens": output_tokens, "ignore_eos": True,
            "messages": [{"role": "user", "content": " ".join(["w"] * input_tokens)}]}  # fmt: skip
    left = iter(range(requests))
    records: list[dict] = []
    conn = aiohttp.TCPConnector(limit=streams, force_close=False)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=600)) as session:

        async def stream(s: int) -> None:
            for _ in left:
                send = time.perf_counter_ns()
                first = last = None
                tokens, gaps = 0, 0
                async with session.post(url + "/v1/chat/completions", json=body) as resp:
                    async for line in resp.content:
                        if b'"content":" tok"' not in line:  # the paced server's token chunk
                            continue
                        now = time.perf_counter_ns()
                        if first is None:
                            first = now
                        else:
                            gaps += now - last
                        last = now
                        tokens += 1
                end = time.perf_counter_ns()
                records.append({"stream": s, "send_ns": send, "first_ns": first, "end_ns": end,
                                "tokens": tokens, "gaps_ns": gaps})  # fmt: skip

        await asyncio.gather(*(stream(s) for s in range(streams)))
    return {"records": records}


if __name__ == "__main__":
    url, c, n, i, o = sys.argv[1], *map(int, sys.argv[2:6])
    print(json.dumps(asyncio.run(main(url, c, n, i, o))))
