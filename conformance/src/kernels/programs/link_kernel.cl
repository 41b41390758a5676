/* The kernel of the `programs` group's link case: it calls a function that
 * only link_library.cl defines, so it runs once the two are linked. */
int scaled_plus_one(int x, int scale);

__kernel void link_scale(__global int *data, int scale) {
    size_t i = get_global_id(0);
    data[i] = scaled_plus_one(data[i], scale);
}
