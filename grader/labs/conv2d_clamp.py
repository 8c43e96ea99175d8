from grader.labs.conv2d import conv2d_lab

LAB = conv2d_lab(
    "conv2d-clamp",
    "clamp",
    "2D convolution, clamped edges",
    "Same-size output; a ghost cell takes the value of the nearest pixel on the edge.",
)
