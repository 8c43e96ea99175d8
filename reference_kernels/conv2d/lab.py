"""2D convolution with the mask in constant memory; ghost cells count as 0."""

from grader.labs.convolution import image_lab
from grader.model.lab import Kernel, Param, Role

KERNEL = Kernel(
    "conv2d",
    (
        Param("N", "const float*", Role.INPUT),
        Param("P", "float*", Role.OUTPUT),
        Param("Width", "int", Role.SCALAR),
        Param("Height", "int", Role.SCALAR),
    ),
)

LAB = image_lab(
    KERNEL,
    "zero",
    "2D convolution, constant-memory mask",
    "Same-size output; ghost cells outside the image count as 0.",
)
