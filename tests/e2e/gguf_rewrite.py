"""A GGUF file's F32 matrices rewritten as Q5_0, Q4_1, Q5_1 or IQ4_NL, in NumPy, for the tests.

llama-quantize writes Q5_0 where a Q4_K row is not whole 256-blocks and Q5_1 where a
Q5_K row is not (Q4_K_M and Q5_K_M files of models 576 or 896 wide), and headwise has no
writer for them: this one follows ggml's reference quantizers (quantize_row_q5_0_ref,
quantize_row_q4_1_ref, quantize_row_q5_1_ref) and the GGUF layout (a header, key/value
pairs copied as they are, tensor infos with the new types and offsets, the data at the
file's alignment). Blocks of 32:
  Q5_0: d (f16), qh (uint32 little-endian: bit j the 5th bit of element j), 16 bytes
        (element j < 16 the low nibble of byte j, j + 16 its high nibble); x = d·(q − 16).
  Q4_1: d, m (f16), 16 bytes of nibbles as Q5_0's; x = d·q + m.
  Q5_1: d, m (f16), qh, 16 bytes as Q5_0's; x = d·q + m.
  IQ4_NL: d (f16), 16 bytes of nibbles as Q5_0's; x = d·IQ4_LEVELS[q]. llama-quantize
        writes it where an IQ4_XS row is not whole 256-blocks. Quantized here by a plain
        rule (d = the largest magnitude's value / −127, q the nearest level of x / d),
        not ggml's scale search: any valid file serves an agreement test.
"""
import struct

GGML_F32, GGML_Q4_1, GGML_Q5_0, GGML_Q5_1, GGML_IQ4_NL = 0, 3, 6, 7, 20
IQ4_LEVELS = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]
# GGUF value types → struct format of a scalar (8 string, 9 array handled apart)
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


class _Reader:
    def __init__(self, b):
        self.b, self.o = b, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.b, self.o)
        self.o += struct.calcsize("<" + fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        s = self.b[self.o:self.o + n].decode()
        self.o += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("I"), self.take("Q")
            return [self.value(et) for _ in range(n)]
        return self.take(_SCALAR[t])


def quantize_q5_0(x):
    """Rows of float32 (length a multiple of 32) as Q5_0 bytes, as ggml quantizes them."""
    import numpy as np
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, 32)
    amax_at = np.abs(x).argmax(1)
    mx = x[np.arange(len(x)), amax_at]
    d = (mx / np.float32(-16)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    # (int8_t)(x·id + 16.5f) truncates toward zero; the sum is ≥ 0.5 here, so it floors
    q = np.minimum(31, np.floor(x * inv[:, None] + np.float32(16.5))).astype(np.uint32)
    qs, qh = _pack_low_high(q)
    out = np.zeros((len(x), 22), dtype=np.uint8)
    out[:, 0:2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:6] = qh.astype("<u4").view(np.uint8).reshape(-1, 4)
    out[:, 6:22] = qs
    return out.tobytes()


def _pack_low_high(q):
    """Quants in [0, 31] of 32-element rows as (16 nibble bytes, qh uint32) per row."""
    import numpy as np
    lo, hi = q[:, :16], q[:, 16:]
    qs = ((lo & 0xF) | ((hi & 0xF) << 4)).astype(np.uint8)
    shifts = np.arange(16, dtype=np.uint32)
    qh = (((lo >> 4) & 1) << shifts).sum(1) + (((hi >> 4) & 1) << (shifts + 16)).sum(1)
    return qs, qh.astype("<u4")


def quantize_offset(x, bits):
    """Rows of float32 (length a multiple of 32) as Q4_1 (bits 4) or Q5_1 (bits 5) bytes,
    as ggml quantizes them: d = (max − min)/(2^bits − 1) (f32 for the division, stored
    f16), m = min, q = min(2^bits − 1, (int)((x − min)/d + 0.5))."""
    import numpy as np
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, 32)
    lo, hi = x.min(1), x.max(1)
    d = ((hi - lo) / np.float32((1 << bits) - 1)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    # (uint8_t)((x − min)·id + 0.5f): the sum is ≥ 0.5, so truncation floors it
    q = np.floor((x - lo[:, None]) * inv[:, None] + np.float32(0.5)).astype(np.uint32)
    q = np.minimum(q, (1 << bits) - 1)
    qs, qh = _pack_low_high(q)
    head = np.stack([d.astype(np.float16), lo.astype(np.float16)], 1).view(np.uint8).reshape(-1, 4)
    if bits == 4:
        return np.concatenate([head, qs], 1).tobytes()
    return np.concatenate([head, qh.view(np.uint8).reshape(-1, 4), qs], 1).tobytes()


def quantize_iq4_nl(x):
    """Rows of float32 (length a multiple of 32) as IQ4_NL bytes (the plain rule above)."""
    import numpy as np
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, 32)
    mx = x[np.arange(len(x)), np.abs(x).argmax(1)]
    d = (mx / np.float32(-127)).astype(np.float16)
    df = d.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(df[:, None] != 0, x / df[:, None], 0)
    levels = np.array(IQ4_LEVELS, dtype=np.float32)
    q = np.abs(v[:, :, None] - levels[None, None, :]).argmin(2).astype(np.uint32)
    qs = ((q[:, :16] & 0xF) | ((q[:, 16:] & 0xF) << 4)).astype(np.uint8)
    return np.concatenate([d.view(np.uint8).reshape(-1, 2), qs], 1).tobytes()


QUANTIZERS = {"iq4_nl": (GGML_IQ4_NL, quantize_iq4_nl),"q5_0": (GGML_Q5_0, quantize_q5_0), "q4_1": (GGML_Q4_1, lambda x: quantize_offset(x, 4)),
              "q5_1": (GGML_Q5_1, lambda x: quantize_offset(x, 5))}


def rewrite_as_q5_0(src, dst, want=lambda name, dims: len(dims) == 2):
    return rewrite_as(src, dst, "q5_0", want)


def rewrite_as(src, dst, qtype, want=lambda name, dims: len(dims) == 2):
    """Copies GGUF `src` to `dst` with each F32 tensor for which want(name, dims) holds
    stored as `qtype` (a QUANTIZERS key); returns the names rewritten."""
    ggml_type, quantize = QUANTIZERS[qtype]
    import numpy as np
    with open(src, "rb") as f:
        b = f.read()
    r = _Reader(b)
    if b[:4] != b"GGUF":
        raise ValueError(f"{src}: not a GGUF file")
    r.o = 4
    version, n_tensors, n_kv = r.take("I"), r.take("Q"), r.take("Q")
    kv_start = r.o
    alignment = 32
    for _ in range(n_kv):
        key = r.string()
        t = r.take("I")
        v = r.value(t)
        if key == "general.alignment":
            alignment = v
    kv_bytes = b[kv_start:r.o]
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("Q") for _ in range(r.take("I"))]
        infos.append((name, dims, r.take("I"), r.take("Q")))
    data_start = (r.o + alignment - 1) // alignment * alignment
    blobs, done = [], []
    for name, dims, t, off in infos:
        n = int(np.prod(dims))
        if t == GGML_F32 and want(name, dims) and dims[0] % 32 == 0:
            x = np.frombuffer(b, dtype="<f4", count=n, offset=data_start + off)
            blobs.append((name, dims, ggml_type, quantize(x)))
            done.append(name)
        else:
            size = {GGML_F32: 4 * n}.get(t)
            if size is None:
                raise ValueError(f"{src}: tensor {name} has type {t}; only F32 sources are handled")
            blobs.append((name, dims, t, b[data_start + off:data_start + off + size]))
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv) + kv_bytes)
    off = 0
    for name, dims, t, data in blobs:
        nb = name.encode()
        out += struct.pack("<Q", len(nb)) + nb + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", t, off)
        off = (off + len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * ((len(out) + alignment - 1) // alignment * alignment - len(out))
    for _, _, _, data in blobs:
        out += data
        out += b"\0" * ((len(data) + alignment - 1) // alignment * alignment - len(data))
    with open(dst, "wb") as f:
        f.write(out)
    return done
