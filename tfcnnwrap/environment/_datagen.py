# -*- coding: utf-8 -*-
"""Write random images as ImageNet-format TFRecords, run *inside* the target's Python (3.5+, TF 1.x or 2.x).

usage: python _datagen.py OUT_DIR COUNT [SEED]

Writes OUT_DIR/train-NNNNN-of-NNNNN (COUNT images over a few shards) and OUT_DIR/validation-00000-of-00001
with the keys tf_cnn_benchmarks' preprocessing.parse_example_proto reads (image/encoded, image/class/label,
image/class/text, image/object/bbox/*) and the rest of an ImageNet record (height, width, channels, format,
...), so `--data_dir=OUT_DIR --data_name=imagenet` decodes and preprocesses them on the host as it does real
ImageNet. The images are seeded: the same COUNT and SEED give the same pictures (a cleared cache comes back
the same). The last line printed is a JSON summary after MARKER.

Standard library, numpy (TensorFlow's own dependency) and TensorFlow only; no f-strings (Python 3.5).
"""

import json
import os
import sys
import time

MARKER = "TFCNNWRAP-DATAGEN-JSON: "
TRAIN_SHARDS = 4
LABELS = 1000  # ImageNet's classes are 1..1000 (tf_cnn_benchmarks' 1001 counts the background class 0)


def _writer_class(tf):
    io = getattr(tf, "io", None)
    writer = getattr(io, "TFRecordWriter", None) if io is not None else None
    if writer is None:  # TF 1.x before tf.io had it
        writer = tf.python_io.TFRecordWriter
    return writer


def _encoder(tf):
    """A function (uint8 HxWx3 numpy array) -> JPEG bytes, eager (TF 2) or through one session (TF 1)."""
    eager = getattr(tf, "executing_eagerly", None)
    if eager is not None and eager():
        return lambda array: tf.image.encode_jpeg(array, quality=90).numpy()
    pixels = tf.placeholder(tf.uint8, [None, None, 3])
    jpeg = tf.image.encode_jpeg(pixels, quality=90)
    session = tf.Session(config=tf.ConfigProto(device_count={"GPU": 0}))
    return lambda array: session.run(jpeg, {pixels: array})


def _picture(np, rng, height, width):
    """A smooth random picture with a little grain: compresses like a photograph, not like noise."""
    coarse = rng.randint(0, 256, size=(height // 16 + 1, width // 16 + 1, 3)).astype(np.float32)
    big = np.kron(coarse, np.ones((16, 16, 1), dtype=np.float32))[:height, :width]
    big += rng.normal(0.0, 12.0, size=big.shape)
    return np.clip(big, 0, 255).astype(np.uint8)


def _example(tf, jpeg, label, height, width, box, name):
    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    def floats(values):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))

    def text(value):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    ymin, xmin, ymax, xmax = box
    feature = {
        "image/height": ints([height]),
        "image/width": ints([width]),
        "image/colorspace": text(b"RGB"),
        "image/channels": ints([3]),
        "image/class/label": ints([label]),
        "image/class/synset": text(("n%08d" % label).encode("ascii")),
        "image/class/text": text(("generated class %d" % label).encode("ascii")),
        "image/object/bbox/xmin": floats([xmin]),
        "image/object/bbox/xmax": floats([xmax]),
        "image/object/bbox/ymin": floats([ymin]),
        "image/object/bbox/ymax": floats([ymax]),
        "image/object/bbox/label": ints([label]),
        "image/format": text(b"JPEG"),
        "image/filename": text(name.encode("ascii")),
        "image/encoded": text(jpeg),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def _write(tf, np, rng, encode, path, first, count):
    """``count`` images numbered from ``first`` into one TFRecord file; the bytes of JPEG written."""
    written = 0
    writer = _writer_class(tf)(path)
    try:
        for i in range(first, first + count):
            height, width = rng.randint(250, 501), rng.randint(333, 501)  # ImageNet's typical 500x375 and smaller
            jpeg = encode(_picture(np, rng, height, width))
            top, left = rng.uniform(0.0, 0.3), rng.uniform(0.0, 0.3)
            box = (top, left, rng.uniform(top + 0.4, 1.0), rng.uniform(left + 0.4, 1.0))
            label = int(rng.randint(1, LABELS + 1))
            writer.write(_example(tf, jpeg, label, height, width, box, "generated_%08d.JPEG" % i).SerializeToString())
            written += len(jpeg)
    finally:
        writer.close()
    return written


def _split(count, shards):
    base, extra = divmod(count, shards)
    return [base + (1 if i < extra else 0) for i in range(shards)]


def main(argv):
    out_dir, count = argv[1], int(argv[2])
    seed = int(argv[3]) if len(argv) > 3 else 0
    started = time.time()
    import numpy as np
    import tensorflow as tf

    rng = np.random.RandomState(seed)
    encode = _encoder(tf)
    files, jpeg_bytes, first = [], 0, 0
    shards = min(TRAIN_SHARDS, count)
    for index, size in enumerate(_split(count, shards)):
        name = "train-%05d-of-%05d" % (index, shards)
        jpeg_bytes += _write(tf, np, rng, encode, os.path.join(out_dir, name), first, size)
        files.append(name)
        first += size
    validation = max(1, count // 10)
    jpeg_bytes += _write(tf, np, rng, encode, os.path.join(out_dir, "validation-00000-of-00001"), first, validation)
    files.append("validation-00000-of-00001")
    total = sum(os.path.getsize(os.path.join(out_dir, f)) for f in files)
    summary = {
        "train_images": count,
        "validation_images": validation,
        "files": files,
        "bytes": total,
        "jpeg_bytes": jpeg_bytes,
        "seconds": round(time.time() - started, 2),
        "tensorflow": getattr(tf, "__version__", None),
        "python": sys.version.split()[0],
        "seed": seed,
    }
    sys.stdout.write("\n" + MARKER + json.dumps(summary) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
