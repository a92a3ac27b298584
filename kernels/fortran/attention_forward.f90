! attention_forward: O = softmax(Q K^T / sqrt(d)) V, one head, fp32.
!   naive  - materialises the n x n probabilities (heap), parallel over rows.
!   memopt - key tiles of bk with an online softmax, parallel over query
!            tiles of bq rows; O(n d) memory, no n x n buffer.
module attention_forward_kernel
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use harness
  use attn_common
  implicit none
  character(len=6), parameter :: variants(2) = [character(len=6) :: 'naive', 'memopt']
  integer, parameter :: naive = 1, memopt = 2
  type(harness_cfg) :: cfg
  integer(int64) :: n, d
  real(real32), allocatable :: q(:, :), k(:, :), v(:, :), o(:, :), p(:, :), kp(:, :, :), lse(:)

contains

  logical function setup(c)
    type(harness_cfg), intent(in) :: c
    integer :: st(6)
    integer(int64) :: chunk
    cfg = c
    n = c%n
    d = c%d
    st = 0
    allocate (q(d, n), stat=st(1))
    allocate (k(d, n), stat=st(2))
    allocate (v(d, n), stat=st(3))
    allocate (o(d, n), stat=st(4))
    if (c%variant == naive) then
      allocate (p(n, n), stat=st(5))
      chunk = 1
    else
      allocate (kp(bk, d, (n + bk - 1) / bk), stat=st(6))
      chunk = bq
    end if
    allocate (lse(1))
    setup = all(st == 0)
    if (.not. setup) then
      call teardown()
      return
    end if
    ! first touch with the compute's schedule: rows (naive), bq-row tiles (memopt)
    call fill_normal(q, n, d, chunk, c%seed, 1_int64)
    call fill_normal(k, n, d, chunk, c%seed, 2_int64)
    call fill_normal(v, n, d, chunk, c%seed, 3_int64)
    call fill_nan(o, n, d, chunk)
    if (allocated(p)) call fill_nan(p, n, n, 1_int64)
    if (allocated(kp)) call fill_nan(kp, (n + bk - 1) / bk, bk * d, 1_int64)
  end function setup

  subroutine poison()
    call fill_nan(o, n, d, merge(1_int64, bq, cfg%variant == naive))
  end subroutine poison

  subroutine run_naive()
    real(real32) :: scale, mx, sm
    integer(int64) :: i, j
    scale = 1.0_real32 / sqrt(real(d, real32))
    !$omp parallel do schedule(static) private(j, mx, sm)
    do i = 1, n
      do j = 1, n
        p(j, i) = dot_product(q(:, i), k(:, j)) * scale
      end do
      mx = maxval(p(:, i))
      p(:, i) = exp_fast(p(:, i) - mx)
      sm = sum(p(:, i))
      p(:, i) = p(:, i) / sm
      o(:, i) = 0
      do j = 1, n
        o(:, i) = o(:, i) + p(j, i) * v(:, j)
      end do
    end do
    !$omp end parallel do
  end subroutine run_naive

  subroutine run()
    if (cfg%variant == naive) then
      call run_naive()
    else
      call memopt_forward(q, k, v, o, lse, .false., kp, n, d)
    end if
  end subroutine run

  ! all rows for n <= check_all_rows, else check_nrows evenly spread rows
  function check() result(err)
    real(real64) :: err
    integer(int64), allocatable :: rows(:)
    real(real64), allocatable :: ref(:, :)
    type(rel_accum) :: a
    integer(int64) :: r
    rows = check_rows(n)
    allocate (ref(d, size(rows)))
    call ref_attention_rows(q, k, v, n, d, rows, ref)
    do r = 1, size(rows)
      call rel_acc(a, o(:, rows(r)), ref(:, r), d)
    end do
    err = rel_final(a)
  end function check

  logical function dump(dir)
    character(len=*), intent(in) :: dir
    call dump_open(dir, 'attention_forward', trim(variants(cfg%variant)), cfg)
    call dump_array('q', q, [n, d])
    call dump_array('k', k, [n, d])
    call dump_array('v', v, [n, d])
    call dump_array('o', o, [n, d])
    dump = dump_close()
  end function dump

  subroutine teardown()
    if (allocated(q)) deallocate (q)
    if (allocated(k)) deallocate (k)
    if (allocated(v)) deallocate (v)
    if (allocated(o)) deallocate (o)
    if (allocated(p)) deallocate (p)
    if (allocated(kp)) deallocate (kp)
    if (allocated(lse)) deallocate (lse)
  end subroutine teardown

end module attention_forward_kernel

program attention_forward
  use attention_forward_kernel
  call harness_main('attention_forward', variants, .false., setup, poison, run, check, dump, teardown)
end program attention_forward
