"""The model's weights in each node's HF cache: present, the same everywhere, hub symlinks, readable."""

import pytest

from gb10check.errors import GB10Error, NodeUnreachable
from gb10check.reading import probes
from gb10check.reading.parsers.hfcache import NETWORK_FILESYSTEMS, readable_by, snapshot_files
from gb10check.reading.snapshot import hub_folder

pytestmark = pytest.mark.preflight


@pytest.fixture
def model(inventory, deployment):
    if inventory.service is None:
        pytest.skip("the inventory has no [service] section (which model to look for)")
    return inventory.service.model


def _files(snap):
    revision = snap.fact(probes.HF_REVISION)
    return revision, snapshot_files(snap.fact(probes.HF_LISTING), revision)


def _has_weights(snap) -> bool:
    try:
        _, files = _files(snap)
    except GB10Error:
        return False
    return "config.json" in files and any(f.endswith(".safetensors") for f in files)


def copy_from(cluster, inventory, lacking: str) -> dict[str, str]:
    """The hint's copy: from a node that has the weights (rank 0 first, then by rank) to the one that lacks
    them, over the address of the lacking node on a rail the two share (else its control-plane address);
    nothing when no node has them (the hint then says to download them once)."""
    others = sorted((n for n in inventory.nodes if n.name != lacking), key=lambda n: n.rank)
    source = next((n.name for n in others if _has_weights(cluster.snapshot(n.name))), None)
    if source is None:
        return {}
    shared = inventory.rails_between(lacking, source)
    target = shared[0].ip(lacking) if shared else inventory.control_address(lacking)
    return {"source_node": source, "target_ip": target} if target else {}


JIT_CACHES = (
    "VLLM_CACHE_ROOT, TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR, TORCH_EXTENSIONS_DIR, FLASHINFER_WORKSPACE_BASE"
)


def _shared_cache(snap, deployment, evidence):
    """The HF cache's filesystem, recorded; a network one named as such, with what it costs where the JIT caches
    sit under it (tonyd2wild's 2x DGX Spark stack, issue #27: an NFS-shared HF cache broke seven JIT caches)."""
    try:
        fs = snap.fact(probes.HF_CACHE_FS)
    except GB10Error as exc:
        evidence.fact("hf_cache_filesystem", f"not read: {str(exc)[:160]}")
        return
    evidence.fact("hf_cache_filesystem", fs)
    if fs in NETWORK_FILESYSTEMS:
        evidence.advise(
            "advice",
            what="the HF cache on a filesystem the nodes share",
            expected=f"the JIT caches ({JIT_CACHES}) outside it, on each node's own disk",
            found=f"{deployment.hf_cache} on {fs}",
            why="both ranks compile into the same folders at once when their JIT caches sit under the shared "
            "cache, and the start fails or stalls (github.com/tonyd2wild/DeepSeek-v4-Flash-Vision-Exp-DSpark-1M-"
            "NVFP4-KV-2x-DGX-Spark issue #27, 2026-08-11); the weights themselves are then one copy, alike",
        )


@pytest.mark.hints("weights-missing")
def test_weights_present(node, model, deployment, cluster, inventory, evidence):
    """The weights present in the HF cache.

    The model's folder in the node's HF cache, its snapshot with config.json and the `*.safetensors` files. The HF
    cache's filesystem is recorded; one the nodes share (NFS, CIFS, ...) is named as such, with what it costs when
    the JIT caches sit under it (advice): both ranks compile into the same folders at once, and the start fails or
    stalls."""
    snap = node.snapshot()
    folder = hub_folder(deployment.hf_cache, model)
    listing = snap.raw(probes.HF_LISTING)
    present = listing.rc == 0 and not listing.timed_out
    evidence.expect(
        present,
        what=f"HF cache of {model}",
        expected=f"{folder} present",
        found="present" if present else (listing.stderr.strip() or "no answer")[:200],
        context=None if present else copy_from(cluster, inventory, node.name),
    )
    _shared_cache(snap, deployment, evidence)
    revision, files = _files(snap)
    weights = [f for f in files if f.endswith(".safetensors")]
    whole = "config.json" in files and bool(weights)
    evidence.expect(
        whole,
        what=f"snapshot {revision[:12]} of {model}",
        expected="config.json and *.safetensors",
        found=f"{len(files)} files, {len(weights)} safetensors"
        + ("" if "config.json" in files else ", no config.json"),
        context=None if whole else copy_from(cluster, inventory, node.name),
    )


@pytest.mark.hints("weights-differ")
def test_weights_identical(cluster, inventory, model, evidence):
    """The same weights on every node.

    The same snapshot revision, the same files and the same sizes on every node as on rank 0, each node's revision,
    file count and bytes recorded; the shards are compared by size, never hashed."""
    seen = {n.name: _files(cluster.snapshot(n.name)) for n in inventory.nodes}
    for name, (rev, files) in seen.items():  # each node's, pass or fail (the table when all agree)
        evidence.fact(name, f"revision {rev[:12]}, {len(files)} files, {sum(f.size for f in files.values())} bytes")
    ref_name = inventory.api_node.name
    ref_rev, ref_files = seen[ref_name]
    ref = {name: f.size for name, f in ref_files.items()}
    problems = []
    for name, (rev, files) in seen.items():
        sizes = {n: f.size for n, f in files.items()}
        if rev != ref_rev:
            problems.append(f"{name}: revision {rev[:12]} (vs {ref_rev[:12]})")
        missing, extra = sorted(set(ref) - set(sizes)), sorted(set(sizes) - set(ref))
        resized = sorted(n for n in set(ref) & set(sizes) if ref[n] != sizes[n])
        for label, names in (("missing", missing), ("extra", extra), ("other size", resized)):
            if names:
                problems.append(f"{name}: {label} {', '.join(names[:5])}" + (" ..." if len(names) > 5 else ""))
    evidence.expect(
        not problems,
        what=f"weights of {model}",
        expected=f"revision {ref_rev[:12]}, {len(ref)} files, same sizes as on {ref_name}",
        found="; ".join(problems) or f"the same on all {len(seen)} nodes",
        detail="copy the missing or differing files again from rank 0, over the QSFP address",
    )


@pytest.mark.hints("weights-differ")
def test_weights_small_files_identical(cluster, inventory, model, evidence):
    """The model's config, index and tokenizer the same on every node.

    sha256 of each of the snapshot's small files that say what the weights are and how they are read (config.json,
    the safetensors index, the tokenizer's files, the chat template): an edited or half-copied config has the same
    name and often the same size. The shards are never hashed."""
    seen = {}
    for n in inventory.nodes:
        try:
            seen[n.name] = cluster.snapshot(n.name).fact(probes.HF_SMALL_FILES)
        except NodeUnreachable:
            raise
        except GB10Error as exc:  # no snapshot folder to hash: the weights check of that node owns it
            pytest.skip(f"follows from test_weights_present[{n.name}]: {str(exc)[:160]}")
    ref_name = inventory.api_node.name
    ref = seen[ref_name]
    for name, sums in seen.items():
        evidence.fact(name, ", ".join(f"{f} {h[:12]}" for f, h in sorted(sums.items())) or "none of them")
    problems = []
    for name, sums in seen.items():
        differ = sorted(f for f in ref if f in sums and sums[f] != ref[f])
        missing, extra = sorted(set(ref) - set(sums)), sorted(set(sums) - set(ref))
        for label, files in (("other content", differ), ("missing", missing), ("extra", extra)):
            if files:
                problems.append(f"{name}: {label} {', '.join(files)}")
    evidence.expect(
        "config.json" in ref and not problems,
        what=f"the small files of {model} (sha256)",
        expected=f"{', '.join(sorted(ref)) or 'config.json'} as on {ref_name}",
        found="; ".join(problems)
        or ("the same on every node" if "config.json" in ref else f"no config.json on {ref_name}"),
        detail="copy them again from rank 0, over the QSFP address",
        context={"node": problems[0].split(":", 1)[0]} if problems else None,
    )


@pytest.mark.hints("rsync-dereferenced")
def test_weights_are_hub_symlinks(node, model, evidence):
    """The weights stored once, as hub symlinks.

    Every entry of the snapshot is still a symlink into blobs/, as the hub writes them (regular files there are the
    weights stored twice over), and every link has its blob."""
    revision, files = _files(node.snapshot())
    copies = sorted(name for name, f in files.items() if not f.linked)
    dangling = sorted(name for name, f in files.items() if f.linked and f.content is None)
    evidence.expect(
        not copies,
        what=f"snapshot {revision[:12]} entries",
        expected="symlinks into blobs/ (as the hub writes them)",
        found=f"{len(copies)} regular files ({', '.join(copies[:3])}{' ...' if len(copies) > 3 else ''})"
        if copies
        else f"{len(files)} symlinks",
        detail=f"{sum(files[c].size for c in copies) / 2**30:.1f} GiB stored twice over",
    )
    evidence.expect(
        not dangling,
        what="snapshot links",
        expected="every link has its blob",
        found=f"dangling: {', '.join(dangling)}" if dangling else "every link resolves",
        hints=("weights-differ",),
    )


@pytest.mark.hints("hf-cache-permissions")
def test_weights_readable(node, model, evidence):
    """The weights readable by the user vLLM runs as.

    Every file the snapshot links to and every folder of the model's HF cache is readable by the deployment user (by
    its user name and groups)."""
    snap = node.snapshot()
    user = snap.fact(probes.WHOAMI)
    groups = frozenset(snap.fact(probes.GROUPS))
    entries = snap.fact(probes.HF_LISTING)
    _, files = _files(snap)
    content = [f.content for f in files.values() if f.content is not None]
    dirs = [e for e in entries.values() if e.kind == "d"]
    blocked = sorted(e.path or "." for e in content + dirs if not readable_by(e, user, groups))
    evidence.expect(
        not blocked,
        what=f"HF cache of {model}, for user {user}",
        expected="every file and folder readable",
        found=f"{len(blocked)} not readable: {', '.join(blocked[:3])}{' ...' if len(blocked) > 3 else ''}"
        if blocked
        else f"{len(content) + len(dirs)} files and folders readable",
    )
