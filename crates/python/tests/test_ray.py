"""`python -m gemma_vision.ray_embed` on a local two-CPU Ray cluster started here: Parquet rows
bit-identical to `gemma-vision embed`'s shards, errors recorded, reruns resume."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

import gemma_vision
from gemma_vision import ray_embed
from conftest import model, run

SIZES = [(32, 24), (24, 32), (40, 40), (29, 17)]


def generate_corpus(directory: Path, count: int = 24) -> None:
    """`count` images of a few sizes (JPEG and PNG, noise) and one broken file."""
    rng = np.random.default_rng(15)
    for i in range(count):
        width, height = SIZES[i % len(SIZES)]
        pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        suffix = "jpg" if i % 2 else "png"
        Image.fromarray(pixels).save(directory / f"image-{i:02d}.{suffix}")
    (directory / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a JPEG")


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster of 2 CPUs, stopped (only its own processes) at the end."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=128 << 20, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def ray_job(address: str, images: Path, out: Path, *extra: str) -> str:
    command = [sys.executable, "-m", "gemma_vision.ray_embed", "--address", address]
    command += ["--model", str(model("tiny-clipped")), "--images", str(images), "--out", str(out)]
    command += ["--max-soft-tokens", "6", "--actors", "2", "--batch", "4", *extra]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    # The job uses Ray Data's current API: no deprecation warning about its own arguments.
    assert "``concurrency`` is deprecated" not in result.stderr, result.stderr[-4000:]
    return result.stdout


def test_the_actors_are_an_actor_pool_of_the_requested_size():
    import ray.data

    options = ray_embed.actor_options(3, 1.5)
    assert isinstance(options["compute"], ray.data.ActorPoolStrategy)
    assert (options["compute"].min_size, options["compute"].max_size) == (3, 3)
    assert "concurrency" not in options and options["num_cpus"] == 1.5


def parquet_rows(out: Path) -> dict[str, dict]:
    table = pa.concat_tables([pq.read_table(f) for f in sorted(out.glob("*.parquet"))])
    rows = {}
    for row in table.to_pylist():
        assert row["path"] not in rows, f"{row['path']} written twice"
        rows[row["path"]] = row
    return rows


def test_the_ray_job_writes_the_bits_of_the_embed_command(cli, cluster, tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    generate_corpus(images)
    shards = tmp_path / "shards"
    run(cli, "embed", "--model", model("tiny-clipped"), "--images", images, "--out", shards,
        "--max-soft-tokens", "6", "--batch", "3", "--shard-size", "10")
    expected = {image.path: image for image in gemma_vision.read_shards(shards)}
    errors = {row["path"]: row["error"] for row in gemma_vision.read_errors(shards)}
    assert len(expected) == 24 and list(errors) == [str(images / "broken.jpg")]

    out = tmp_path / "parquet"
    printed = ray_job(cluster, images, out)
    assert "embedded 25 image(s)" in printed and "with 2 actor(s)" in printed
    rows = parquet_rows(out)
    assert set(rows) == set(expected) | set(errors)
    schema = pq.read_schema(sorted(out.glob("*.parquet"))[0])
    assert schema.field("features").type == pa.list_(pa.list_(pa.uint16(), 48))
    for path, image in expected.items():
        row = rows[path]
        assert row["error"] is None and row["model_identity"] == image.model_identity
        assert (row["soft_tokens"], row["budget"]) == (image.soft_tokens, 6)
        got = np.array(row["features"], dtype=np.uint16)
        assert got.shape == image.features.shape
        assert got.tobytes() == image.features.view(np.uint16).tobytes(), path
    for path, message in errors.items():
        assert rows[path]["features"] is None and rows[path]["error"] == message

    # A rerun finds everything written and adds nothing.
    files = sorted(out.glob("*.parquet"))
    printed = ray_job(cluster, images, out)
    assert "embedded 0 image(s)" in printed and "skipped 25" in printed
    assert sorted(out.glob("*.parquet")) == files


def test_a_rerun_completes_a_partial_output_and_drops_unreadable_files(cluster, tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    generate_corpus(images, count=8)
    out = tmp_path / "parquet"
    ray_job(cluster, images, out)
    complete = parquet_rows(out)
    # Keep half the rows, as a killed run would, plus a file cut short mid-write.
    table = pa.concat_tables([pq.read_table(f) for f in sorted(out.glob("*.parquet"))])
    for f in out.glob("*.parquet"):
        f.unlink()
    pq.write_table(table.slice(0, 4), out / "earlier.parquet")
    (out / "cut.parquet").write_bytes((out / "earlier.parquet").read_bytes()[:100])
    printed = ray_job(cluster, images, out)
    assert "embedded 5 image(s)" in printed and "skipped 4" in printed
    assert not (out / "cut.parquet").exists()
    resumed = parquet_rows(out)
    assert set(resumed) == set(complete)
    for path, row in complete.items():
        assert resumed[path] == row


def test_an_output_of_another_encoder_is_refused(tmp_path):
    out = tmp_path / "parquet"
    out.mkdir()
    table = ray_embed.to_table(["a.png"], [None], ["bad"], "other-identity", 6, 48, True)
    pq.write_table(table, out / "old.parquet")
    with pytest.raises(SystemExit, match="another encoder"):
        ray_embed.done_paths(out, "this-identity", 6)
    with pytest.raises(SystemExit, match="budget 6"):
        ray_embed.done_paths(out, "other-identity", 7)
    assert ray_embed.done_paths(out, "other-identity", 6) == {"a.png"}


def test_float32_features_are_fixed_size_lists_of_float32():
    encoder = gemma_vision.Encoder(model("tiny-clipped"), dtype="f32", max_soft_tokens=6)
    image = np.zeros((20, 30, 3), np.uint8)
    [features] = encoder.encode([image])
    table = ray_embed.to_table(["x", "y"], [features, None], [None, "e"], encoder.identity, 6, 48, False)
    assert table.schema.field("features").type == pa.list_(pa.list_(pa.float32(), 48))
    row = table.to_pylist()[0]
    assert np.array(row["features"], np.float32).tobytes() == features.tobytes()
    assert table.column("features").null_count == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_the_job_actors_reuse_freed_memory_without_faults(cluster):
    # What an encode does to `malloc`, in small: large blocks allocated, written and freed, in
    # the thread Ray Data calls the UDF from, in an actor started with the job's options.
    class Churn:
        def __init__(self):
            self.accepted = gemma_vision.retain_freed_host_memory()

        def __call__(self, batch):
            import resource

            def faults() -> int:
                before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                for mib in (24, 48, 96, 12, 160, 40):
                    block = b"\x01" * (mib << 20)
                    del block
                return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

            faults()  # the heap grows to its working size once
            return {"result": np.array([[int(self.accepted), faults()]] * len(batch["item"]))}

    import ray

    dataset = ray.data.from_items(list(range(2))).map_batches(
        Churn, batch_size=1, batch_format="numpy", **ray_embed.actor_options(1, 1.0)
    )
    pages = (24 + 48 + 96 + 12 + 160 + 40) * 256
    for row in dataset.take_all():
        accepted, retained = row["result"]
        assert accepted == 1
        assert retained < pages // 100, f"{retained} faults for {pages} pages touched"
