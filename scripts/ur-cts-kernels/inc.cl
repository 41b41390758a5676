// device_code/inc.cpp: parallel_for<inc> (declared at namespace scope) over
// range<1>{1}, captures [acc].
kernel void _ZTS3inc(global uint *acc, ulong acc_offset) {
    acc += acc_offset;
    acc[get_global_id(0)]++;
}
