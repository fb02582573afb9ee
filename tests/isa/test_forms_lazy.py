"""Issue 31: the encoder and the emitter's hazard facts walk a mnemonic's forms lazily (`SpecForms.iter_forms`,
each form built only when reached), so a new process builds about one form per mnemonic it emits. The lazy walk
must give exactly `forms_for`'s forms in `forms_for`'s order (shortest first, VOP3 before SDWA/DPP), or the
encoder would pick another encoding; and the timing trace must read the form the encoder chose."""

from __future__ import annotations

import random

import pytest
from jitgemm.isa.spec.forms import SpecForms

from jitgemm import isa


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_lazy_walk_is_forms_for(target):
    spec = isa.load_spec(target)
    eager = SpecForms(spec)
    names = sorted(eager.by_mnemonic)
    lazy = SpecForms(spec)
    for name in random.Random(7).sample(names, 400) + ["v_add_f32", "V_ADD_F32", "v_mfma_f32_32x32x8_bf16"]:
        walked = lazy.iter_forms(name)
        want = eager.forms_for(name)
        assert (walked is None) == (want is None), name
        if want is not None:
            got = list(walked)
            assert [(f.enc.name, f.spec_inst.name, f.size) for f in got] == \
                [(f.enc.name, f.spec_inst.name, f.size) for f in want], name
    assert lazy.iter_forms("v_no_such_instruction") is None


def test_a_walk_stopped_early_builds_only_what_it_reached():
    spec = isa.load_spec("gfx942")
    forms = SpecForms(spec)
    first = next(forms.iter_forms("v_add_f32"))
    assert first.mnemonic.startswith("v_add_f32") and first.size == 4    # the e32 form, shortest
    assert len([f for f in forms._built.values() if f is not None]) == 1
