! decode (naive): one query q (d) against a KV cache K, V (n x d):
! o = softmax(K q / sqrt(d)) V.  Parallel over the n keys: each thread runs an
! online softmax over its static share of kb-key blocks (float inside a
! block, double across blocks), and the per-thread partials are merged with
! their max-rescaling at the end.  O(n d) memory: scales to n >> 1e6.
module decode_kernel
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use harness
  use attn_common, only: exp_fast
  use omp_lib
  implicit none
  character(len=5), parameter :: variants(1) = ['naive']
  integer(int64), parameter :: kb = 256
  type(harness_cfg) :: cfg
  integer(int64) :: n, d
  real(real32), allocatable :: q(:), k(:, :), v(:, :), o(:), part(:, :)
  real(real64), allocatable :: dpart(:, :)

contains

  logical function setup(c)
    type(harness_cfg), intent(in) :: c
    integer :: st(6), nt
    cfg = c
    n = c%n
    d = c%d
    nt = omp_get_max_threads()
    allocate (q(d), stat=st(1))
    allocate (o(d), stat=st(2))
    allocate (k(d, n), stat=st(3))
    allocate (v(d, n), stat=st(4))
    allocate (part(d + kb, nt), stat=st(5))       ! block acc(d), scores(kb)
    allocate (dpart(d + 2, 0:nt), stat=st(6))     ! acc(d), m, l per thread; 0: merge
    setup = all(st == 0)
    if (.not. setup) then
      call teardown()
      return
    end if
    call fill_normal(q, 1_int64, d, 1_int64, c%seed, 1_int64)
    call fill_normal(k, n, d, kb, c%seed, 2_int64)   ! same static block schedule as run
    call fill_normal(v, n, d, kb, c%seed, 3_int64)
    call fill_nan(part, int(nt, int64), d + kb, 1_int64)
    dpart = 0
    call poison()
  end function setup

  subroutine poison()
    o = qnan()
  end subroutine poison

  subroutine run()
    real(real32) :: scale, mx, sm
    real(real64) :: corr, m_big, l_big, w
    integer(int64) :: b, j, j0, nj, blocks
    integer :: me, t, nt
    scale = 1.0_real32 / sqrt(real(d, real32))
    blocks = (n + kb - 1) / kb
    nt = 1
    !$omp parallel private(me, b, j, j0, nj, mx, sm, corr)
    me = omp_get_thread_num() + 1
    !$omp single
    nt = omp_get_num_threads()
    !$omp end single
    associate (acc => part(1:d, me), sc => part(d + 1:d + kb, me), dacc => dpart(1:d, me))
      dacc = 0
      dpart(d + 1, me) = -huge(1.0_real32)
      dpart(d + 2, me) = 0
      !$omp do schedule(static)
      do b = 1, blocks
        j0 = (b - 1) * kb
        nj = min(kb, n - j0)
        do j = 1, nj
          sc(j) = dot_product(q, k(:, j0 + j)) * scale
        end do
        mx = max(real(dpart(d + 1, me), real32), maxval(sc(1:nj)))
        corr = exp(dpart(d + 1, me) - real(mx, real64))
        sc(1:nj) = exp_fast(sc(1:nj) - mx)
        sm = sum(sc(1:nj))
        acc = 0
        do j = 1, nj
          acc = acc + sc(j) * v(:, j0 + j)
        end do
        dpart(d + 2, me) = dpart(d + 2, me) * corr + sm
        dpart(d + 1, me) = mx
        dacc = dacc * corr + acc
      end do
      !$omp end do
    end associate
    !$omp end parallel
    ! merge the per-thread partials (a thread without blocks has l = 0)
    m_big = -huge(1.0_real64)
    do t = 1, nt
      if (dpart(d + 2, t) > 0) m_big = max(m_big, dpart(d + 1, t))
    end do
    dpart(:, 0) = 0
    l_big = 0
    do t = 1, nt
      if (.not. dpart(d + 2, t) > 0) cycle
      w = exp(dpart(d + 1, t) - m_big)
      l_big = l_big + w * dpart(d + 2, t)
      dpart(1:d, 0) = dpart(1:d, 0) + w * dpart(1:d, t)
    end do
    o = real(dpart(1:d, 0) / l_big, real32)
  end subroutine run

  ! all n keys: the float64 reference costs O(n d)
  function check() result(err)
    real(real64) :: err
    real(real64), allocatable :: sc(:), ref(:)
    integer(int64) :: j
    allocate (sc(n), ref(d))
    !$omp parallel do schedule(static)
    do j = 1, n
      sc(j) = dot_product(real(q, real64), real(k(:, j), real64)) / sqrt(real(d, real64))
    end do
    !$omp end parallel do
    sc = exp(sc - maxval(sc))
    ref = 0
    do j = 1, n
      ref = ref + sc(j) * real(v(:, j), real64)
    end do
    ref = ref / sum(sc)
    err = rel_err(o, ref, d)
  end function check

  logical function dump(dir)
    character(len=*), intent(in) :: dir
    call dump_open(dir, 'decode', 'naive', cfg)
    call dump_array('q', q, [d])
    call dump_array('k', k, [n, d])
    call dump_array('v', v, [n, d])
    call dump_array('o', o, [d])
    dump = dump_close()
  end function dump

  subroutine teardown()
    if (allocated(q)) deallocate (q)
    if (allocated(o)) deallocate (o)
    if (allocated(k)) deallocate (k)
    if (allocated(v)) deallocate (v)
    if (allocated(part)) deallocate (part)
    if (allocated(dpart)) deallocate (dpart)
  end subroutine teardown

end module decode_kernel

program decode
  use decode_kernel
  call harness_main('decode', variants, .false., setup, poison, run, check, dump, teardown)
end program decode
