"""Write the CLI's output (`-o FILE`) so that a failure never costs the user a file.

A regular file is replaced atomically: written to a temporary file beside it, flushed to disk, then
renamed over it, so a full disk or a kill leaves the old file whole. An output that is one of the
inputs is refused. Every OSError becomes one line and exit 2.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Iterable

from generator.errors import InputError, Problem


def _fail(file: str, reason: str) -> InputError:
    return InputError([Problem(file, None, "", f"cannot write the output: {reason}")])


def _reason(exc: OSError, kept: bool) -> str:
    text = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT) and kept:
        text += "; the previous file is kept as it was"
    return text


def refuse_inputs(output: str | None, inputs: Iterable[str]) -> None:
    """Refuse an output path that names one of the inputs (the same file by path, link or inode)."""
    if not output or output == "-":
        return
    for name in inputs:
        if not name or name == "-":
            continue
        try:
            same = os.path.samefile(output, name)
        except OSError:
            same = os.path.realpath(output) == os.path.realpath(name)
        if same:
            raise InputError([Problem(output, None, "", f"refusing to write the output over the input {name}; "
                                      "choose another -o path")])


def write_stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        silence_stdout()
        raise _fail("<stdout>", exc.strerror or str(exc)) from None


def silence_stdout() -> None:
    """After a failed write the unwritten text stays buffered; point fd 1 at /dev/null so the flush
    at exit does not fail a second time with a traceback."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if sys.stdout.fileno() == 1:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.close(null)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_file(text: str, output: str) -> None:
    """Replace `output` with `text` atomically (or write through to a device or FIFO)."""
    data = text.encode("utf-8")
    if output.endswith(os.sep):
        raise _fail(output, "the path names a folder; give a file name")
    target = os.path.realpath(output)  # a symlink keeps pointing at the file it names
    try:
        old = os.stat(target)
    except FileNotFoundError:
        old = None
    except OSError as exc:
        raise _fail(output, exc.strerror or str(exc)) from None
    if old is not None and stat.S_ISDIR(old.st_mode):
        raise _fail(output, "it is a directory")
    if old is not None and not stat.S_ISREG(old.st_mode):
        _write_through(data, output, target)  # /dev/stdout, /dev/null, a FIFO: nothing to replace
        return
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise _fail(output, f"the folder {os.path.dirname(output) or folder} does not exist")
    if old is not None and not os.access(target, os.W_OK):
        raise _fail(output, "the file is read-only")
    try:
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    except OSError as exc:
        raise _fail(output, f"cannot create a file in the folder {folder}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(old.st_mode) if old else 0o666 & ~_umask())
        if old is not None and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):
                os.chown(tmp, old.st_uid, old.st_gid)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _fail(output, _reason(exc, old is not None)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _write_through(data: bytes, output: str, target: str) -> None:
    try:
        with open(target, "wb") as f:
            f.write(data)
            f.flush()
    except OSError as exc:
        raise _fail(output, exc.strerror or str(exc)) from None


def write(text: str, output: str | None) -> None:
    """`text` to `output`, or to stdout when there is none or it is `-`."""
    if not output or output == "-":
        write_stdout(text)
    else:
        write_file(text, output)
