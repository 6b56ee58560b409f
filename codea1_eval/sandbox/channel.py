"""A worker's side of the frame protocol (``worker.py`` loads this script; like the worker, it imports only the
standard library): length-prefixed JSON frames on the result pipe (``Channel``), and the outcomes of calls, held and
sent together: the values of calls that returned in runs, the frames of the others as they are (``Results``). The
protocol itself is described in ``worker.py``."""

import json
import os
import struct
import time


class Channel:
    """Length-prefixed JSON frames on a pipe, written with raw os.write (no buffering)."""

    def __init__(self, fd):
        self.fd, self.write, self.pack = fd, os.write, struct.pack
        self.to_json = _json_encoder()

    def send(self, frame):
        self.send_text(self.to_json(frame))

    def send_text(self, text):
        data = text.encode()
        self._write(self.pack(">I", len(data)) + data)

    def send_texts(self, texts):
        """Several frames' JSON texts in one write."""
        pack = self.pack
        self._write(b"".join([pack(">I", len(data)) + data for data in [text.encode() for text in texts]]))

    def _write(self, data):
        view = memoryview(data)
        while view:
            written = self.write(self.fd, view)
            view = view[written:]


def _json_encoder():
    """``json.dumps(frame, allow_nan=False)`` with compact separators, made once (``json.dumps`` builds an encoder
    per call: ~2 of its ~3 us a frame). Frames are built by ``encode``, without cycles: no cycle check."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.JSONEncoder(allow_nan=False, separators=(",", ":")).encode
    iterencode = make(None, None, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False)
    return lambda frame, join="".join: join(iterencode(frame, 0))


BATCH_CALLS = 256
BATCH_WINDOW_S = 0.01
BATCH_CHARS = 8 << 20  # a frame is at most 64 MiB (session.MAX_FRAME_BYTES): long strs go in smaller batches


class Results:
    """The outcomes of a worker's calls, held and sent together in one write: the values of consecutive calls that
    returned as one run (``{"k": "returned", "i": first, "v": [...], "ns": [...]}``), the frame of each call that did
    not as it is (``ended``; where the parent judges results ``early``, sent at once after what is held, so that it
    hears of a failure at once). Sent once BATCH_CALLS are held (one unless ``batched``; where ``early``, 1, doubled
    after each send), BATCH_CHARS, or the first was held BATCH_WINDOW_S (also checked by ``CallAlarm``), before any
    other frame (``send``), at once after a "digesting" word and at the end. A dying worker's held results are lost:
    the parent runs those calls again."""

    def __init__(self, channel, batched, early=True):
        self.largest = BATCH_CALLS if batched else 1  # calls held before a send: at most, and (limit) now
        self.limit, self.early = 1 if early else self.largest, early
        self.channel, self.held, self.first, self.chars, self.since, self.digested = channel, [], 0, 0, 0.0, None
        self.ended_held = 0  # frames of calls that did not return among those held
        self.clock = time.monotonic  # bound now: a candidate may patch the time module

    def returned(self, index, text, nanoseconds):
        """Hold call ``index``'s value, as JSON ``text`` (the calls held are those just before it), or, with
        ``nanoseconds`` None, its whole frame (``ended``)."""
        if not self.held:
            self.first, self.since, self.chars = index, self.clock(), 0
        self.held.append((text, nanoseconds))  # one append: a MemoryError leaves no value without its time
        self.chars += len(text)
        if (len(self.held) >= self.limit or self.chars >= BATCH_CHARS or index == self.digested
                or self.clock() - self.since >= BATCH_WINDOW_S):
            self.flush()

    def ended(self, frame):
        """Hold the frame of a call that did not return (made JSON first), or send it after what is held where the
        parent judges results ``early``."""
        if self.early:
            return self.send(frame)
        text = self.channel.to_json(frame)
        self.ended_held += 1
        self.returned(frame["i"], text, None)

    def drop(self, index):
        """Forget call ``index`` where it is the last held (its run's send failed: another frame says what it did)."""
        if self.held and self.first + len(self.held) - 1 == index:
            self.ended_held -= self.held.pop()[1] is None

    def send(self, frame):
        """Send ``frame`` after the results held (made JSON first: an unserialisable value raises)."""
        text = self.channel.to_json(frame)
        self.flush()
        self.channel.send_text(text)
        self.digested = frame["i"] if frame["k"] == "digesting" else None

    def flush(self):
        if self.held:  # emptied once sent: a send that fails (near the candidate's limits) keeps them
            if self.ended_held:
                self.channel.send_texts(self._frames())
            else:
                self.channel.send_text(_run(self.first, self.held))
            self.held, self.ended_held, self.limit = [], 0, min(2 * self.limit, self.largest)

    def _frames(self):
        """The frames of the calls held: each run of values as one, each other call's frame as it is."""
        frames, run, start = [], [], self.first
        for offset, (text, nanoseconds) in enumerate(self.held):
            if nanoseconds is not None:
                start = start if run else self.first + offset
                run.append((text, nanoseconds))
                continue
            if run:
                frames.append(_run(start, run))
                run = []
            frames.append(text)
        if run:
            frames.append(_run(start, run))
        return frames


def _run(first, held):
    """The "returned" frame of the values ``held`` (JSON text and nanoseconds each), from call ``first`` on."""
    return (f'{{"k":"returned","i":{first},"v":[{",".join([t for t, _ in held])}],'
            f'"ns":[{",".join([str(ns) for _, ns in held])}]}}')
