// device_code/usm_ll.cpp: single_task<class linkedlist> capturing the head of
// a linked list of shared USM nodes; doubles each node's number plus one.
struct Node {
    global struct Node *next;
    uint num;
};

kernel void _ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_E10linkedlist(global struct Node *head) {
    while (head) {
        head->num = head->num * 2 + 1;
        head = head->next;
    }
}
