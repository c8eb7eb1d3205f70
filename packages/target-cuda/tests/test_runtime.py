"""The driver-API runtime. Without a GPU: argument packing and launch limits (pure), the
clear error when no driver is there, and the whole path of a call (NVRTC cubin for the
device's arch, module load, allocations, copies, the launch with its packed arguments,
events) followed through a recording stand-in for `cuda.bindings.driver` that stops at the
launch. With a GPU (marked `cuda`): the same call runs and matches numpy."""

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest

from tensorforge import te
from tensorforge_cuda import nvrtc
from tensorforge_cuda.runtime import CUDADevice, NoCudaDevice, launch_shape, pack_args

OK = 0


def test_pack_args_points_at_each_value_in_its_type():
    params = [{"kind": "buffer", "dtype": "float32"}, {"kind": "scalar", "dtype": "int32"},
              {"kind": "scalar", "dtype": "float16"}]
    keep, ptrs = pack_args(params, [0xDEAD0000, 7, 0.5])
    assert ptrs.dtype == np.uint64 and len(ptrs) == 3
    assert ctypes.c_uint64.from_address(int(ptrs[0])).value == 0xDEAD0000
    assert ctypes.c_int32.from_address(int(ptrs[1])).value == 7
    assert ctypes.c_float.from_address(int(ptrs[2])).value == 0.5
    with pytest.raises(Exception, match="takes 3 arguments, got 2"):
        pack_args(params, [1, 2])


def test_launch_shape_checks_the_limits():
    assert launch_shape([4, 2], [32]) == (4, 2, 1, 32, 1, 1)
    with pytest.raises(Exception, match="outside the limits"):
        launch_shape([1], [1024, 2])


def test_without_a_driver_making_a_device_says_why():
    from tensorforge.testing.hardware import has_cuda

    if has_cuda():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(NoCudaDevice, match="no NVIDIA driver or GPU here"):
        CUDADevice()


class RecordingDriver:
    """`cuda.bindings.driver`'s calls over host memory; records module loads and launches
    and runs nothing (there is no GPU)."""

    def __init__(self):
        from cuda.bindings import driver

        self.CUdevice_attribute = driver.CUdevice_attribute
        self.memory, self.loaded, self.launches, self.events = {}, [], [], 0

    def __getattr__(self, name):  # context, stream and event bookkeeping: accepted
        return lambda *a: (OK, object()) if "Create" in name or "Retain" in name else (OK,)

    def cuDeviceGet(self, i):
        return OK, i

    def cuDeviceGetAttribute(self, attr, dev):
        return OK, 9 if "MAJOR" in attr.name else 0

    def cuDeviceGetName(self, n, dev):
        return OK, b"Recording H200\0"

    def cuMemAlloc(self, n):
        buf = np.zeros(n, np.uint8)
        self.memory[buf.ctypes.data] = buf
        return OK, buf.ctypes.data

    def cuMemFree(self, ptr):
        self.memory.pop(int(ptr), None)
        return (OK,)

    def cuMemcpyHtoD(self, dst, src, n):
        ctypes.memmove(int(dst), src, n)
        return (OK,)

    def cuMemcpyDtoH(self, dst, src, n):
        ctypes.memmove(dst, int(src), n)
        return (OK,)

    def cuModuleLoadData(self, image):
        self.loaded.append(bytes(image))
        return OK, "module"

    def cuModuleGetFunction(self, module, name):
        return OK, name.decode()

    def cuEventCreate(self, flags):
        self.events += 1
        return OK, self.events

    def cuEventElapsedTime(self, a, b):
        return OK, 0.25

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        ptrs = (ctypes.c_uint64 * 2).from_address(params)  # the two buffers' pointers
        self.launches.append(SimpleNamespace(
            name=f, grid=(gx, gy, gz), block=(bx, by, bz),
            args=[ctypes.c_uint64.from_address(int(p)).value for p in ptrs]))
        return (OK,)


def _vector_add(cuda):
    import tensorforge

    a = te.placeholder((1000,), "float32", name="a")
    b = te.compute((1000,), lambda i: a[i] * 2.0, name="b")
    s = te.create_schedule(b.op)
    bx, tx = s[b].split(b.op.axis[0], factor=64)
    s[b].bind(bx, te.thread_axis("blockIdx.x"))
    s[b].bind(tx, te.thread_axis("threadIdx.x"))
    return tensorforge.build(s, [a, b], target=cuda)


def test_a_call_follows_the_driver_path_up_to_the_launch(plugins):
    if not nvrtc.has_nvrtc():
        pytest.skip(f"NVRTC is not installed: {nvrtc.INSTALL}")
    plugins.register("tensorforge_cuda.plugin", "cuda", distribution="tensorforge-target-cuda")
    from tensorforge.target import Target

    mod = _vector_add(Target.parse("cuda"))
    fake = RecordingDriver()
    dev = CUDADevice(0, driver=fake)
    assert dev.arch == "sm_90" and "Recording H200" in dev.name
    mod._device = dev  # the module's device: the recording one
    x = np.arange(1000, dtype="float32")
    fn = mod.get_function(mod.entry_name)
    da, db = mod.to_device(x), mod.to_device(np.zeros(1000, "float32"))
    fn.run([da, db])
    (cubin,) = fake.loaded
    assert cubin == nvrtc.compile_cuda(mod.get_source(), "sm_90").cubin  # the device's arch
    (launch,) = fake.launches
    kernel = mod.desc["functions"][0]["kernels"][0]
    assert launch.name == kernel["name"]
    assert list(launch.grid) == kernel["grid"] and list(launch.block) == kernel["block"]
    assert launch.args == [int(da.handle), int(db.handle)]
    np.testing.assert_array_equal(da.numpy(), x)  # copies went through cuMemcpy*
    timed = mod.time_evaluator(mod.entry_name, number=2, repeat=1)(da, db)
    assert timed.results == [pytest.approx(0.25e-3 / 2)]  # from the events' elapsed time


@pytest.mark.cuda
def test_a_call_runs_on_the_gpu(plugins):
    plugins.register("tensorforge_cuda.plugin", "cuda", distribution="tensorforge-target-cuda")
    from tensorforge.target import Target

    mod = _vector_add(Target.parse("cuda"))
    x = np.arange(1000, dtype="float32")
    y = np.zeros_like(x)
    mod(x, y)
    np.testing.assert_array_equal(y, x * 2)
