"""A stand-in for CuPy that is as strict as a GPU about where arrays live.

Arrays of this module wrap NumPy arrays but refuse what CuPy refuses: mixing
with NumPy arrays in arithmetic, and implicit conversion to NumPy
(``np.asarray(device_array)`` raises ``TypeError``); ``.get()`` copies to the
host, ``asarray`` to the device. Code that passes its tests with this module
as ``xp`` moves data between host and device only where it says so, which is
what running on a GPU needs; the numbers are NumPy's, so results can be
compared with the NumPy backend bit for bit.
"""

import operator

import numpy as np

__all__ = ["DeviceArray", "module"]


class DeviceArray:
    __array_priority__ = 1000

    def __init__(self, data):
        self._data = data

    def get(self):
        return np.array(self._data)

    def __array__(self, *args, **kwargs):
        raise TypeError(
            "Implicit conversion of a device array to a NumPy array is not allowed; "
            "use .get()."
        )

    @property
    def shape(self):
        return self._data.shape

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def size(self):
        return self._data.size

    @property
    def T(self):
        return DeviceArray(self._data.T)

    def copy(self):
        return DeviceArray(self._data.copy())

    def astype(self, dtype):
        return DeviceArray(np.asarray(self._data.astype(dtype)))

    def __len__(self):
        return len(self._data)

    def __bool__(self):
        return bool(self._data)

    def __float__(self):
        return float(self._data)

    def __int__(self):
        return int(self._data)

    def __getitem__(self, key):
        return _wrap(self._data[_key(key)])

    def __setitem__(self, key, value):
        self._data[_key(key)] = _operand(value)

    def _binary(op, reflected=False):
        def method(self, other):
            other = _operand(other)
            if reflected:
                return _wrap(op(other, self._data))
            return _wrap(op(self._data, other))

        return method

    __add__ = _binary(operator.add)
    __radd__ = _binary(operator.add, True)
    __sub__ = _binary(operator.sub)
    __rsub__ = _binary(operator.sub, True)
    __mul__ = _binary(operator.mul)
    __rmul__ = _binary(operator.mul, True)
    __truediv__ = _binary(operator.truediv)
    __rtruediv__ = _binary(operator.truediv, True)
    __matmul__ = _binary(operator.matmul)
    __rmatmul__ = _binary(operator.matmul, True)
    __gt__ = _binary(operator.gt)
    __lt__ = _binary(operator.lt)
    __ge__ = _binary(operator.ge)
    __le__ = _binary(operator.le)

    def __neg__(self):
        return DeviceArray(-self._data)

    def __iadd__(self, other):
        self._data += _operand(other)
        return self


def _wrap(value):
    return DeviceArray(value) if isinstance(value, np.ndarray) else value


def _operand(value):
    if isinstance(value, DeviceArray):
        return value._data
    if isinstance(value, np.ndarray) and value.ndim > 0:
        raise TypeError(
            "Unsupported operand: a NumPy array mixed with a device array; "
            "move it with asarray first."
        )
    return value


def _key(key):
    if isinstance(key, tuple):
        return tuple(_key(k) for k in key)
    if isinstance(key, np.ndarray):
        raise TypeError("Index a device array with device arrays, not NumPy arrays.")
    return key._data if isinstance(key, DeviceArray) else key


def _unwrap_all(values):
    return [_operand(v) for v in values]


def _asarray(value, dtype=None):
    if isinstance(value, DeviceArray):
        return value if dtype is None else DeviceArray(value._data.astype(dtype))
    return DeviceArray(np.array(value, dtype=dtype))


def _array(value, dtype=None):
    return DeviceArray(np.array(_operand(value), dtype=dtype))


def _reduction(func):
    def reduce(x, axis=None):
        return _wrap(np.asarray(func(_operand(x), axis=axis)))

    return reduce


module = type(np)("strict_device")
module.asarray = _asarray
module.array = _array
module.zeros_like = lambda x: DeviceArray(np.zeros_like(_operand(x)))
module.sum = _reduction(np.sum)
module.all = _reduction(np.all)
module.isfinite = lambda x: DeviceArray(np.isfinite(_operand(x)))
module.concatenate = lambda arrays, axis=0: DeviceArray(
    np.concatenate(_unwrap_all(arrays), axis=axis)
)
module.float64 = np.float64
module.zeros = lambda shape, dtype=np.float64: DeviceArray(np.zeros(shape, dtype))
module.arange = lambda *args: DeviceArray(np.arange(*args))
module.exp = lambda x: DeviceArray(np.exp(_operand(x)))
module.sqrt = lambda x: DeviceArray(np.sqrt(_operand(x)))
module.maximum = lambda x, y: DeviceArray(np.maximum(_operand(x), _operand(y)))
module.argmax = lambda x: _wrap(np.asarray(np.argmax(_operand(x))))
module.stack = lambda arrays: DeviceArray(np.stack(_unwrap_all(arrays)))
module.eye = lambda n: DeviceArray(np.eye(n))
module.log = lambda x: DeviceArray(np.log(_operand(x)))
module.abs = lambda x: DeviceArray(np.abs(_operand(x)))
module.linalg = type(np)("strict_device.linalg")
module.linalg.cholesky = lambda a: DeviceArray(np.linalg.cholesky(_operand(a)))


def _solve_triangular(a, b, lower=False):
    from scipy.linalg import solve_triangular

    return DeviceArray(solve_triangular(_operand(a), _operand(b), lower=lower))


module.solve_triangular = _solve_triangular
