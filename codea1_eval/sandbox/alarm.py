"""A worker's per-call time limits on SIGALRM (``worker.py`` loads this script; like the worker, it imports only the
standard library). Where the job asks for evalplus' alarm (its ``time_limit`` per input in ``unsafe_execute``), a call
out of time gets an ``Exception`` that the candidate may catch and go on from, as it may there: the worker then tells the
harness (an ``{"k": "alarm", "i": index}`` frame), which waits for that call no longer per call but only to its input
list's cap, as evalplus kills an input list's process only there."""

import _signal
import signal
import time


class CallTimeout(BaseException):
    """Raised by the soft per-call alarm; BaseException so plain `except Exception` won't eat it."""


class CatchableCallTimeout(Exception, CallTimeout):
    """evalplus' alarm's: its TimeoutException is an Exception, which a candidate's ``except Exception`` catches."""


class CallAlarm:
    """Per-call time limits and the held results' send-by time on one SIGALRM timer, re-armed only when it is off or
    would fire too late (arming and disarming it around each call cost ~1.1 us of ~4). So an alarm may come during a
    call within its limit (an earlier call's, a batch to send): the handler returns, Python resumes (PEP 475). Each
    call starts with this handler and the timer due by its deadline, as evalplus' per-input ``time_limit`` has them: a
    handler the candidate replaced, or a timer it disarmed or moved later (``signal.alarm``), is set again; a handler
    the call set is undone after it. ``evalplus`` (set once the program is loaded): a call out of time gets
    ``CatchableCallTimeout``, the harness word of it first. An alarm the candidate arms itself, keeping this handler,
    ends its call here at the call's limit, where evalplus' handler (which raises on every SIGALRM) ends it at once:
    telling that alarm from this timer's own would race with the timer, which stays armed between calls."""

    def __init__(self, results, call_index, batch_window_s):
        self.results, self.call_index, self.window = results, call_index, batch_window_s
        self.clock = time.monotonic  # bound now: a candidate may patch the time module
        self.deadline = None  # time.monotonic() at which the running call is out of time; None between calls
        self.armed = None  # time.monotonic() at which the timer fires; None while it is off
        self.set_timer, self.get_timer = signal.setitimer, signal.getitimer
        self.set_handler = _signal.signal  # 0.16 us, where signal.signal's enum wrapper takes 1-2
        self.evalplus, self.handler = False, self.on_alarm  # the handler, bound once
        self.set_handler(signal.SIGALRM, self.handler)

    def start(self, limit):
        """Just before a call (or the program's load) that may run ``limit`` seconds; returns the time now."""
        now = self.clock()
        self.deadline = due = now + max(limit, 1e-3)
        if self.results.held:
            due = min(due, self.results.since + self.window)
        self.set_handler(signal.SIGALRM, self.handler)  # for each input, as evalplus' time_limit does (also below Python)
        if (self.armed is None or self.armed > due
                or not 0 < self.get_timer(signal.ITIMER_REAL)[0] <= self.armed - now + 1e-3):
            self._arm(due, now)  # off, too late, or disarmed or moved later by the candidate
        return now

    def stop(self):
        """Just after a call (or the load): a handler it set, in Python or below, does not outlive it."""
        self.deadline = None
        self.set_handler(signal.SIGALRM, self.handler)

    def _arm(self, due, now):
        self.set_timer(signal.ITIMER_REAL, max(due - now, 1e-6))
        self.armed = due

    def on_alarm(self, signum, frame):
        self.armed = None
        deadline = self.deadline
        if deadline is None:
            return  # between calls: the next one arms the timer as it needs
        now = self.clock()
        if now >= deadline:
            if not self.evalplus:
                raise CallTimeout()
            try:  # the results held before this call's first, then the word
                self.results.flush()
                self.results.channel.send({"k": "alarm", "i": self.call_index[0]})
            except Exception:  # a pipe the candidate closed, no memory or stack left: the hard deadline then stands
                pass
            raise CatchableCallTimeout()
        results = self.results
        if results.held and now >= results.since + self.window:
            results.flush()
            spent = self.clock() - now  # a pipe the parent has not emptied yet may block: not the call's time
            self.deadline = deadline = deadline + spent
            now += spent
        self._arm(min(deadline, results.since + self.window) if results.held else deadline, now)
