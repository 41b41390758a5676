// The Vulkan baseline's kernel: one invocation that does nothing, with no
// resources, so its pipeline layout is empty. Regenerate empty.spv with
// glslangValidator -V --target-env vulkan1.1 empty.comp -o empty.spv
#version 450
layout(local_size_x = 1) in;
void main() {}
