"""Stoke from Python.

``stoke.DataLoader`` is a drop-in for ``torch.utils.data.DataLoader``, with its signature, over an
ImageFolder tree or a torchvision dataset: Stoke's Java producer decodes into a private ring in
anonymous shared memory and the batches are torch tensors viewing it, without a copy::

    loader = stoke.DataLoader("/data/imagenet/train", batch_size=256, shuffle=True)
    for images, labels in loader:       # uint8 [n, 224, 224, 3] and int64 [n]
        ...

``stoke.Ring`` is the low-level consumer of a ring that ``stoke serve`` writes elsewhere (numpy
only; torch optional). ``stoke.tune`` finds the batch size and workers that feed a step fastest
(``stoke tune``'s engine). See README.md.
"""

from ._home import StokeNotFoundError
from .loader import Batch, DataLoader, ProducerError, SampleError, SkippedSample, StokeWarning
from .ring import ProducerGoneError, Ring, RingBatch, RingBusyError, RingFormatError, RingOwnerError, attach
from .tune import TuneError, tune
from ._producer import prestart as _prestart_producer

__all__ = ["DataLoader", "Batch", "SampleError", "SkippedSample", "ProducerError", "StokeNotFoundError",
           "Ring", "RingBatch", "RingFormatError", "ProducerGoneError", "RingBusyError", "RingOwnerError", "attach", "StokeWarning",
           "tune", "TuneError"]

_prestart_producer()  # a producer for this process's first loader, starting while the script goes on
