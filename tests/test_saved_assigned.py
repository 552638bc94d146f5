"""A saved attribute value decides a branch only when no code assigns that attribute: a
module that sets ``self.seen = int(x.sum())`` in ``forward`` reads what it set, not what
``data.pkl`` saved, so check never says which branch a trace or torch.export takes from it
(an abstention); an attribute no code assigns is still decided by its saved value."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor, nn

import codeparse
from codeparse.contract.check import Policy

pytestmark = [
    pytest.mark.torch,
    pytest.mark.filterwarnings("ignore:`torch.jit.*is deprecated:DeprecationWarning"),
]


class Stateful(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = 0
        self.limit = 3
        self.sub = nn.Identity()
        self.sub.flag = 0  # a plain attribute of the submodule, saved

    def forward(self, x: Tensor, n: int) -> Tensor:
        self.seen = int(x.sum())
        if self.seen > 0:  # the value forward just set: no saved value decides it
            x = x + 1
        sub = self.sub
        sub.flag = n
        if sub.flag > 1:  # set through an alias of the submodule: neither
            x = x + 2
        if self.limit > 2:  # assigned nowhere: the saved 3 decides it
            x = x + 3
        return x


@pytest.mark.parametrize("target", ["trace", "export"])
def test_an_attribute_the_code_assigns_is_not_decided_by_its_saved_value(tmp_path, target):
    scripted = torch.jit.script(Stateful())
    path = tmp_path / "stateful.pt"
    torch.jit.save(scripted, str(path))
    # What torch does: with x = ones the then branch of `self.seen > 0` runs (the saved 0
    # would say else).
    assert torch.equal(scripted(torch.ones(2), 0), torch.ones(2) + 1 + 3)
    report = codeparse.check([str(path)], Policy(target=target))
    (item,) = report.inputs
    by_condition = {f.args.get("condition"): f for f in item.findings if f.args.get("condition")}
    seen = by_condition["torch.gt(self.seen, 0)"]
    flag = by_condition["torch.gt(self.sub.flag, 1)"]
    limit = by_condition["torch.gt(self.limit, 2)"]
    for f in (seen, flag):
        assert "saved in the archive" not in f.message and not f.args.get("decided"), f.message
    assert "then branch: self.limit = 3 (saved in the archive)" in limit.message
