// device_code/sequence.cpp: single_task<Add> then single_task<Mul> (both
// declared at namespace scope), each capturing a read-write accessor.
kernel void _ZTS3Add(global uint *acc, ulong acc_offset) {
    acc += acc_offset;
    for (uint i = 0; i < 1000; i++) {
        volatile uint tmp = acc[0];
        acc[0] = tmp + 1;
    }
}

kernel void _ZTS3Mul(global uint *acc, ulong acc_offset) {
    acc += acc_offset;
    for (uint i = 0; i < 2; i++) {
        volatile uint tmp = acc[0];
        acc[0] = tmp * 2;
    }
}
