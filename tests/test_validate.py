"""mjvec.validate: one form of check for counts, numbers and flags (numpy's types accepted, bools
never taken for numbers), each refusal naming the argument, the allowed values and the value."""

from __future__ import annotations

import numpy as np
import pytest

from mjvec.errors import ConfigError
from mjvec.validate import require_bool, require_int, require_number


def test_accepted_values_come_back_as_plain_python() -> None:
    assert require_int(np.int32(3), "n", low=1) == 3 and type(require_int(np.int64(3), "n")) is int
    assert require_int(None, "n", low=1, optional=True) is None
    assert require_number(np.float32(0.5), "x", low=0.0, high=1.0) == 0.5
    assert type(require_number(2, "x")) is float
    assert require_bool(np.True_, "flag") is True


@pytest.mark.parametrize(("call", "match"), [
    (lambda: require_int(True, "n", low=1), r"n must be an int >= 1, got True"),
    (lambda: require_int(2.0, "n", low=1), r"n must be an int >= 1, got 2.0"),
    (lambda: require_int(0, "num_threads", low=1, optional=True), r"num_threads must be an int >= 1 or None, got 0"),
    (lambda: require_int(11, "k", low=0, high=10), r"k must be an int in \[0, 10\], got 11"),
    (lambda: require_int(None, "k", low=0), r"k must be an int >= 0, got None"),
    (lambda: require_number(np.nan, "x", low=0.0), r"x must be a finite number >= 0.0, got nan"),
    (lambda: require_number(0.0, "scale", low=0.0, low_open=True), r"scale must be a finite number > 0.0, got 0.0"),
    (lambda: require_number(False, "x"), r"x must be a finite number, got False"),
    (lambda: require_number(2.0, "p", low=0.0, high=1.0), r"p must be a finite number in \[0.0, 1.0\], got 2.0"),
    (lambda: require_bool(1, "flag"), r"flag must be True or False, got 1"),
])
def test_refusals_name_the_argument_the_allowed_values_and_the_value(call, match) -> None:
    with pytest.raises(ConfigError, match=match):
        call()
