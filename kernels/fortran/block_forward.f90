! block_forward (naive): y = x + W_down^T (silu(x^ W_gate) * (x^ W_up)),
! x^ = RMSNorm(x) * g = x / sqrt(mean(x^2) + eps) * g, eps = 1e-6.
! Memory layout identical to the C kernel: x(d, n) (row r = column r),
! wg(f, d) = W_gate (d x f row-major), wu(f, d), wd(d, f) = W_down (f x d).
! Parallel over rows; per-thread heap scratch of d + 2 f, no n x f buffer.
module block_forward_kernel
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use harness
  use attn_common, only: exp_fast
  use omp_lib
  implicit none
  character(len=5), parameter :: variants(1) = ['naive']
  real(real32), parameter :: rms_eps = 1e-6_real32
  integer(int64), parameter :: rows_chunk = 16   ! rows per static chunk
  type(harness_cfg) :: cfg
  integer(int64) :: n, d, f
  real(real32), allocatable :: x(:, :), g(:), wg(:, :), wu(:, :), wd(:, :), y(:, :), scr(:, :)

contains

  logical function setup(c)
    type(harness_cfg), intent(in) :: c
    integer :: st(7)
    cfg = c
    n = c%n
    d = c%d
    f = c%ff
    allocate (x(d, n), stat=st(1))
    allocate (y(d, n), stat=st(2))
    allocate (g(d), stat=st(3))
    allocate (wg(f, d), stat=st(4))
    allocate (wu(f, d), stat=st(5))
    allocate (wd(d, f), stat=st(6))
    allocate (scr(d + 2 * f, omp_get_max_threads()), stat=st(7))
    setup = all(st == 0)
    if (.not. setup) then
      call teardown()
      return
    end if
    call fill_normal(x, n, d, rows_chunk, c%seed, 1_int64)
    call fill_normal(g, 1_int64, d, 1_int64, c%seed, 2_int64)
    call fill_normal(wg, d, f, 1_int64, c%seed, 3_int64)
    call fill_normal(wu, d, f, 1_int64, c%seed, 4_int64)
    call fill_normal(wd, f, d, 1_int64, c%seed, 5_int64)
    ! as the torch kernels draw them: normal / sqrt(fan_in)
    wg = wg * (1.0_real32 / sqrt(real(d, real32)))
    wu = wu * (1.0_real32 / sqrt(real(d, real32)))
    wd = wd * (1.0_real32 / sqrt(real(f, real32)))
    call fill_nan(scr, int(size(scr, 2), int64), d + 2 * f, 1_int64)
    call poison()
  end function setup

  subroutine poison()
    call fill_nan(y, n, d, rows_chunk)
  end subroutine poison

  subroutine run()
    integer(int64) :: ch, r, k, j
    real(real32) :: inv
    !$omp parallel private(ch, r, k, j, inv)
    associate (xh => scr(1:d, omp_get_thread_num() + 1), &
               a => scr(d + 1:d + f, omp_get_thread_num() + 1), &
               b => scr(d + f + 1:d + 2 * f, omp_get_thread_num() + 1))
      !$omp do schedule(static)
      do ch = 0, (n + rows_chunk - 1) / rows_chunk - 1
        do r = ch * rows_chunk + 1, min((ch + 1) * rows_chunk, n)
          inv = 1.0_real32 / sqrt(sum(x(:, r)**2) / real(d, real32) + rms_eps)
          xh = x(:, r) * inv * g
          a = 0
          b = 0
          do k = 1, d
            a = a + xh(k) * wg(:, k)
            b = b + xh(k) * wu(:, k)
          end do
          a = a / (1.0_real32 + exp_fast(-a)) * b
          y(:, r) = x(:, r)
          do j = 1, f
            y(:, r) = y(:, r) + a(j) * wd(:, j)
          end do
        end do
      end do
      !$omp end do
    end associate
    !$omp end parallel
  end subroutine run

  ! all rows: the float64 reference costs O(n d f)
  function check() result(err)
    real(real64) :: err
    real(real64), allocatable :: ref(:, :), xh(:), h(:), av(:), bv(:)
    integer(int64) :: r, k, j
    allocate (ref(d, n))
    !$omp parallel private(xh, h, av, bv, k, j)
    allocate (xh(d), h(f), av(f), bv(f))
    !$omp do schedule(static)
    do r = 1, n
      xh = real(x(:, r), real64) / sqrt(sum(real(x(:, r), real64)**2) / real(d, real64) + real(rms_eps, real64)) &
           * real(g, real64)
      av = 0
      bv = 0
      do k = 1, d
        av = av + xh(k) * real(wg(:, k), real64)
        bv = bv + xh(k) * real(wu(:, k), real64)
      end do
      h = av / (1.0_real64 + exp(-av)) * bv
      ref(:, r) = real(x(:, r), real64)
      do j = 1, f
        ref(:, r) = ref(:, r) + h(j) * real(wd(:, j), real64)
      end do
    end do
    !$omp end do
    deallocate (xh, h, av, bv)
    !$omp end parallel
    err = rel_err(y, ref, n * d)
  end function check

  logical function dump(dir)
    character(len=*), intent(in) :: dir
    call dump_open(dir, 'block_forward', 'naive', cfg)
    call dump_array('x', x, [n, d])
    call dump_array('g', g, [d])
    call dump_array('w_gate', wg, [d, f])
    call dump_array('w_up', wu, [d, f])
    call dump_array('w_down', wd, [f, d])
    call dump_array('y', y, [n, d])
    dump = dump_close()
  end function dump

  subroutine teardown()
    if (allocated(x)) deallocate (x)
    if (allocated(y)) deallocate (y)
    if (allocated(g)) deallocate (g)
    if (allocated(wg)) deallocate (wg)
    if (allocated(wu)) deallocate (wu)
    if (allocated(wd)) deallocate (wd)
    if (allocated(scr)) deallocate (scr)
  end subroutine teardown

end module block_forward_kernel

program block_forward
  use block_forward_kernel
  call harness_main('block_forward', variants, .true., setup, poison, run, check, dump, teardown)
end program block_forward
