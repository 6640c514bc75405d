"""A grey image for ``kind: image``: a PNG (8- or 16-bit grey) or a CSV of grey levels, read once and bounded.

The file's bytes come from :func:`ordercube.pipeline.files.inputfile.read_input` (a regular file, read once; its sha256 is the
dataset's identity). A PNG's size is read from its own header (the IHDR chunk that follows the signature,
its CRC checked) and an image above :data:`MAX_IMAGE_PIXELS` is refused before a pixel is decoded: a header
may claim 10^10 pixels in a few bytes. A CSV's rows and columns are counted before it is parsed. Only then
does Pillow decode, restricted to PNG; its decompression-bomb guard (a warning, then an error, far above
this limit) is turned into the same refusal should it ever fire.

An image whose patches cannot tell ranks apart is refused too: a constant image, or (for the tiling) one
whose tiles are all the same patch. Every row of the patch matrix is then one vector, the matrix has rank
one, and the truncated SVD of every rank k >= 1 reconstructs the clean patches exactly (Eckart & Young,
1936); the oracle's PSNR and the transfer cost of eq. (7) in Frank, Chehreghani & Buhmann (2011) differ
across k by noise alone, so k̂ would be decided by the draw, not by the image.
"""

from __future__ import annotations

import io
import struct
import warnings
import zlib
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.files.inputfile import InputFile, read_input

#: The largest image read, in pixels (4096 x 4096). A trial holds the image as float64 three times (clean,
#: noisy, tiled): 384 MiB at this size, against 6 MiB for the paper's 512 x 512 image. It lies below
#: Pillow's own decompression-bomb warning (89,478,485 pixels), so Pillow never warns for an image read.
MAX_IMAGE_PIXELS = 4096 * 4096
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
GREY_MODES = {"L": 255.0, "I;16": 65535.0, "I;16B": 65535.0, "I": 65535.0}
EXPECTED = "a grey PNG or a CSV of grey levels"


@dataclass(frozen=True)
class LoadedImage:
    pixels: NDArray[np.float64]  # (height, width) grey levels
    peak: float  # the format's largest grey level (255 for 8 bits), for the PSNR
    read: str
    sha256: str


def load_image(path: str, key: str) -> LoadedImage:
    """The grey levels of the image at ``path`` (PNG or CSV), its format's peak level, what was read, its digest."""
    return image_of(read_input(path, key, expected=EXPECTED), key)


def image_of(file: InputFile, key: str) -> LoadedImage:
    """The grey levels of an image file's bytes: a PNG by its name's suffix, else a CSV (the ``image`` reader)."""
    path = str(file.path)
    if path.lower().endswith(".png"):
        pixels, peak = _png(file, key)
    else:
        pixels, peak = _csv_image(file, key), 255.0
    read = f"{pixels.shape[0]} x {pixels.shape[1]} grey image (peak {peak:g}) from {path}"
    return LoadedImage(pixels=pixels, peak=peak, read=read, sha256=file.sha256)


def png_size(data: bytes, path: str, key: str) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk: the 13 bytes after the signature and the chunk's length and type,
    followed by their CRC-32 over type and data (PNG specification, 2nd ed., sections 5.3 and 11.2.2)."""
    if not data.startswith(PNG_SIGNATURE):
        raise ConfigError(key, f"{path} is not a PNG (it does not begin with the PNG signature)", f"give {EXPECTED}")
    header = data[8:33]
    if len(header) < 25 or header[:8] != struct.pack(">I", 13) + b"IHDR":
        raise ConfigError(key, f"{path} is not a readable PNG (no IHDR header after the signature)", f"give {EXPECTED}")
    if zlib.crc32(header[4:21]) != struct.unpack(">I", header[21:25])[0]:
        raise ConfigError(key, f"{path} is not a readable PNG (its IHDR header fails its CRC)", f"give {EXPECTED}")
    width, height = struct.unpack(">II", header[8:16])
    return width, height


def check_pixels(width: int, height: int, path: str, key: str) -> None:
    """Refuse an image of no pixel, or of more than :data:`MAX_IMAGE_PIXELS`, before it is decoded."""
    if width == 0 or height == 0:
        raise ConfigError(key, f"{path} is {width} x {height} pixels: an empty image", f"give {EXPECTED}")
    if width * height > MAX_IMAGE_PIXELS:
        raise ConfigError(key, f"{path} is {width} x {height} = {width * height} pixels, above the "
                          f"{MAX_IMAGE_PIXELS} (4096 x 4096) read at most", "crop or scale the image down")


def _png(file: InputFile, key: str) -> tuple[NDArray[np.float64], float]:
    from PIL import Image, UnidentifiedImageError  # matplotlib's dependency

    path = str(file.path)
    check_pixels(*png_size(file.data, path, key), path, key)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(file.binary(), formats=["PNG"]) as image:
                mode = image.mode
                pixels = np.asarray(image)
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as error:
        raise ConfigError(key, f"{path} is refused by Pillow's decompression-bomb guard ({error})",
                          "crop or scale the image down") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError, zlib.error) as error:
        raise ConfigError(key, f"{path} is not a readable PNG ({error})", f"give {EXPECTED}") from None
    if mode not in GREY_MODES:
        raise ConfigError(key, f"{path} is a {mode} image, not 2-D grey levels",
                          "convert it to grey first (e.g. PIL: Image.open(path).convert('L').save(...))")
    if pixels.ndim != 2:
        raise ConfigError(key, f"{path} is {pixels.ndim}-D, not a 2-D grey image", "give one grey image")
    return pixels.astype(np.float64), GREY_MODES[mode]


def _csv_image(file: InputFile, key: str) -> NDArray[np.float64]:
    path = str(file.path)
    text = file.text(key).getvalue()
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ConfigError(key, f"{path} holds no grey levels", "give grey levels 0-255, comma-separated, one image "
                          "row per line")
    check_pixels(max(line.count(",") for line in lines) + 1, len(lines), path, key)
    try:
        image = np.loadtxt(io.StringIO(text), delimiter=",", ndmin=2, dtype=np.float64)
    except ValueError as error:
        raise ConfigError(key, f"{path} is not a CSV of numbers ({str(error).splitlines()[0]})",
                          "give grey levels 0-255, comma-separated, one image row per line, no header") from None
    if not np.isfinite(image).all() or image.min() < 0 or image.max() > 255:
        raise ConfigError(key, f"{path} holds values outside 0-255 (min {np.nanmin(image):g}, max {np.nanmax(image):g})",
                          "give 8-bit grey levels 0-255 (or a PNG)")
    return image


def check_image_structure(pixels: NDArray[np.float64], patch: int, placement: str, path: str, key: str) -> None:
    """Refuse an image whose patch matrix has one distinct row: a constant image, or identical tiles (tiling)."""
    if pixels.min() == pixels.max():
        raise ConfigError(key, f"every pixel of {path} is {pixels.min():g}: a constant image has no structure, its "
                          "patches are all the same vector and every rank k >= 1 reconstructs them exactly",
                          "give an image with contrast")
    if placement == "tiling":
        height, width = pixels.shape
        tiles = pixels.reshape(height // patch, patch, width // patch, patch)  # a view: tile (i, j) is [i, :, j, :]
        if (tiles == pixels[:patch, :patch][None, :, None, :]).all():
            raise ConfigError(key, f"all {(height // patch) * (width // patch)} tiles of {path} are the same {patch} x "
                              f"{patch} patch: the patch matrix has rank 1 and every rank k >= 1 reconstructs it "
                              "exactly", "give an image whose tiles differ, or placement: random")
