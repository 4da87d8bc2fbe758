"""run_interruptible: a stop signal cancels helm's coroutine whichever thread the kernel hands it to."""

from __future__ import annotations

import asyncio
import signal
import threading

import pytest

from generator.live.helm.runner import run_interruptible


async def _work(started: threading.Event, seen: list[str]) -> str:
    started.set()
    try:
        await asyncio.sleep(5)
    except asyncio.CancelledError:
        seen.append("cancelled")
        raise
    return "finished"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_on_a_helper_thread_cancels_the_coroutine(sig):
    started, seen = threading.Event(), []

    def helper() -> None:  # a blocked non-main thread, as run's watcher and lease renewer are
        started.wait()
        signal.pthread_kill(threading.get_ident(), sig)

    mine = lambda *_: None  # noqa: E731 - the handler the CLI had before (restored afterwards)
    before = signal.signal(sig, mine)
    try:
        thread = threading.Thread(target=helper)
        thread.start()
        with pytest.raises(KeyboardInterrupt):
            run_interruptible(_work(started, seen))
        thread.join()
        # without the loop's own handlers the sleep ran out first and nothing was cancelled
        assert seen == ["cancelled"]
        assert signal.getsignal(sig) is mine
    finally:
        signal.signal(sig, before)


def test_without_a_signal_it_is_asyncio_run_and_leaves_the_handlers():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}

    async def quick() -> str:
        return "done"

    assert run_interruptible(quick()) == "done"
    assert {sig: signal.getsignal(sig) for sig in before} == before
