/* The library of the `programs` group's link case: a function and no
 * kernel, compiled apart from link_kernel.cl, whose kernel calls it. */
int scaled_plus_one(int x, int scale) {
    return x * scale + 1;
}
