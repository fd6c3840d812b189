from benchmarks.accelerator import VARIANTS, row_or_failure


def test_a_variant_that_crashes_is_a_failed_row_naming_the_error():
    def crash():
        raise RuntimeError("inductor: something went wrong\nlong traceback")

    assert row_or_failure(crash) == {"failed": "RuntimeError: inductor: something went wrong"}
    assert row_or_failure(lambda: {"images_per_s": 1.0}) == {"images_per_s": 1.0}


def test_cuda_graphs_are_a_variant_of_the_gpu_part():
    assert VARIANTS["compile reduce-overhead"] == {"compile": True, "compile_mode": "reduce-overhead"}
