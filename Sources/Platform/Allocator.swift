import CShim

/// glibc's allocator settings.
public enum Allocator {
    /// Asks malloc to keep freed memory in the process: no trimming of the heap top below `trimBytes`
    /// free, and blocks up to `mmapBytes` (at most 32 MiB on 64-bit) from the heap rather than their own
    /// mmap. Returns which of the two took (mallopt says only done or not, with no errno).
    public static func keepFreedMemory(trimBytes: Int32 = 1 << 30, mmapBytes: Int32 = 32 << 20) -> (trim: Bool, mmap: Bool) {
        (shim_malloc_trim_threshold(trimBytes) == 1, shim_malloc_mmap_threshold(mmapBytes) == 1)
    }
}
