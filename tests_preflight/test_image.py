"""The deployment image: the expected tag on every node, the compose using it, the same layers."""

import pytest

from gb10check.judging.compare import odd_ones_out, shown
from gb10check.reading import probes

pytestmark = pytest.mark.preflight


@pytest.mark.hints("wrong-image")
def test_compose_uses_the_deployment_image(node, cluster, deployment, evidence):
    """The launch plan runs the deployment image.

    The image the node's compose (or launch script) runs is the inventory's deployment image: a generic vLLM release
    does not know this model's architecture and exits during model init."""
    plan = cluster.plan(node.name)
    image = plan.image.known()
    evidence.expect(
        image == deployment.image,
        what=f"the image {node.name}'s {plan.launcher} runs ({plan.image.source or plan.read_by})",
        expected=deployment.image,
        found=image or "no image",
        detail="a generic vLLM release does not know this model's architecture and exits during model init",
    )


@pytest.mark.hints("image-missing")
def test_image_present(node, deployment, evidence):
    """The deployment image present.

    The deployment image (its exact tag) is on the node, built for arm64 (GB10 is aarch64); other tags of its
    repository found there instead are named."""
    snap = node.snapshot()
    image = snap.fact(probes.IMAGE)
    repo = deployment.image.rsplit(":", 1)[0]
    others = [r for r in snap.fact(probes.DOCKER_IMAGES) if r.startswith(repo + ":") and r != deployment.image]
    evidence.expect(
        image is not None,
        what="deployment image",
        expected=deployment.image,
        found=(deployment.image if image else "not on this node") + (f"; only {', '.join(others)}" if others else ""),
        hints=("wrong-image",) if others else (),
    )
    evidence.expect(
        image.architecture in ("arm64", "aarch64"),
        what=f"architecture of {deployment.image}",
        expected="arm64 (GB10 is aarch64)",
        found=image.architecture or "none stated by docker image inspect",
    )


@pytest.mark.hints("image-layers-differ")
def test_image_layers_identical(cluster, inventory, deployment, evidence):
    """The image's layers the same on every node.

    After `docker load` the image ID may differ between nodes; the RootFS layers must not."""
    layers = {}
    for spec in inventory.nodes:
        image = cluster.snapshot(spec.name).fact(probes.IMAGE)
        layers[spec.name] = image.layers if image else None
        # each node's, pass or fail (the table when all agree); its image ID shown, never compared
        evidence.fact(spec.name, _layers(layers[spec.name]) + (f", image ID {image.id[:19]}" if image else ""))
    missing = [name for name, value in layers.items() if value is None]
    keys = {name: tuple(value) if value is not None else None for name, value in layers.items()}
    odd = sorted(set(odd_ones_out(keys, [inventory.api_node.name])) | set(missing))
    common = next((layers[n] for n in layers if n not in odd), None)
    evidence.expect(
        not odd,
        what=f"RootFS layers of {deployment.image}",
        expected="the same on every node" + (f" ({len(common)} layers)" if common else ""),
        found=shown({name: _layers(value) for name, value in layers.items()}, odd),
        detail="the image ID and digest may differ between nodes for one image (docker load, containerd's "
        "snapshotter): the RootFS layers are what is compared",
        hints=("image-missing",) if missing else (),
        context={"node": odd[0]} if odd else None,
    )


def _layers(value):
    return "image missing" if value is None else f"{len(value)} layers, last {value[-1][:19] if value else None}"
