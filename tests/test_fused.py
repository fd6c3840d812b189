"""A fused group (benchmarks/fused_group.py) trains each member as the same configuration trains alone: same
initial weights, same batches, the product's own optimizer (trainables.training.make_optimizer) on the alone side.
Dropout 0 makes the two exact up to float rounding; a rate above 0 is checked to give each member its own masks."""

import pytest
import torch
import torch.nn.functional as F

from benchmarks.fused_group import FusedGroup, MemberDropout, product_model
from trainables.training import make_optimizer

STEPS, BATCH = 20, 8
MEMBERS = [  # different lr, momentum and weight decay each
    {"lr": 0.05, "momentum": 0.9, "weight_decay": 1e-3, "dropout": 0.0},
    {"lr": 0.01, "momentum": 0.5, "weight_decay": 0.0, "dropout": 0.0},
    {"lr": 0.02, "momentum": 0.8, "weight_decay": 1e-4, "dropout": 0.0, "nesterov": True},
]
SHAPES = {"cnn_mnist": {"width": 8}, "mlp_mnist": {"hidden": 32, "layers": 2}}  # small members, quick on a CPU


def batches(seed: int = 0, distinct: int = 4) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`distinct` random batches, seen in turn for STEPS steps: a loss that falls shows the members learn."""
    generator = torch.Generator().manual_seed(seed)
    made = [
        (torch.randn(BATCH, 1, 28, 28, generator=generator), torch.randint(0, 10, (BATCH,), generator=generator))
        for _ in range(distinct)
    ]
    return [made[step % distinct] for step in range(STEPS)]


def losses_alone(model, hp: dict, data) -> list[float]:
    optimizer = make_optimizer({"optimizer": "sgd", **hp}, model)
    model.train()
    losses = []
    for images, labels in data:
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("space", list(SHAPES))
def test_each_fused_member_trains_as_its_configuration_alone(space):
    torch.set_num_threads(1)
    hps = [{**SHAPES[space], **hp} for hp in MEMBERS]
    models = []
    for index, hp in enumerate(hps):
        torch.manual_seed(index)
        models.append(product_model(space, hp))
    group = FusedGroup(models, hps, torch.device("cpu"))  # copies the models: they stay untrained here
    data = batches()
    fused = torch.stack([group.step(images, labels) for images, labels in data])  # [steps, members]
    for index, (model, hp) in enumerate(zip(models, hps)):
        alone = torch.tensor(losses_alone(model, hp, data))
        assert torch.allclose(fused[:, index], alone, rtol=1e-4, atol=1e-5), (index, fused[:, index], alone)
        assert alone[-4:].mean() < alone[:4].mean()  # it learnt, so a wrong update would show
        member = group.member_state(index)
        for name, tensor in model.state_dict().items():
            assert torch.allclose(member[name], tensor, rtol=1e-4, atol=1e-5), (index, name)


def test_each_member_draws_its_own_dropout_at_its_own_rate():
    torch.manual_seed(0)
    models = [torch.nn.Sequential(torch.nn.Dropout(p)) for p in (0.0, 0.5)]
    group = FusedGroup(models, [{"lr": 0.1}, {"lr": 0.1}], torch.device("cpu"))
    assert all(isinstance(module, MemberDropout) for module in group.base)
    out = group.logits(torch.ones(4000, 1))
    assert torch.equal(out[0], torch.ones(4000, 1))  # rate 0: unchanged
    kept = out[1] != 0
    assert 0.45 < kept.float().mean() < 0.55 and torch.all(out[1][kept] == 2.0)  # rate 0.5: half kept, scaled by 2
