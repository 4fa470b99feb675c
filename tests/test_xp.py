"""mjvec.xp's helpers against the expressions they stand for, in numpy and torch."""

from __future__ import annotations

import numpy as np
import torch

from mjvec.xp import assign_where


def test_assign_where_is_a_where_in_place_in_either_namespace():
    """mjvec.xp.assign_where against target[...] = where(mask, values, target): numpy (a masked
    copy) and torch, a row mask broadcast over columns, array and scalar values, bool targets."""
    rng = np.random.default_rng(0)
    target = rng.normal(size=(6, 4))
    values = rng.normal(size=(6, 4))
    mask = (rng.random(6) < 0.5)[:, None]
    for make in (np.asarray, torch.as_tensor):
        for new in (values, 0.0):
            t = make(target.copy())
            want = np.where(mask, new, target)
            assign_where(t, make(mask), make(new) if isinstance(new, np.ndarray) else new)
            np.testing.assert_array_equal(np.asarray(t), want)
        flags = make(np.zeros((6, 4), bool))
        assign_where(flags, make(mask), make(values > 0))
        np.testing.assert_array_equal(np.asarray(flags), np.where(mask, values > 0, False))
