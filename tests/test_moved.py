"""The module paths that moved keep working until their removal release: each old path imports as
the very module at its new path, with a DeprecationWarning naming the new path and the release."""

from __future__ import annotations

import importlib
import re
import sys

import pytest

from mjvec import _moved


@pytest.mark.parametrize(("old", "new"), sorted(_moved.MOVED_MODULES.items()))
def test_an_old_path_is_the_new_module_with_a_dated_warning(old: str, new: str) -> None:
    sys.modules.pop(old, None)  # an earlier import would be served from the cache without a warning
    message = f"{old} moved to {new}; import it from there (the old path will be removed in mjvec {_moved.REMOVED_IN})"
    with pytest.warns(DeprecationWarning, match=re.escape(message)):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
